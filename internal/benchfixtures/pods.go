// Package benchfixtures builds the objects, the minimal caches and the
// measuring instruments that the side-by-side benchmarks (bench_test.go,
// controllerruntime/bench_test.go) share, and creates the objects in a
// real API server, so that every implementation is measured on the same
// fixtures.
package benchfixtures

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// MinimalPods returns count pods with a random 20-letter name in namespace
// ns and nothing else: the fixture of client-go's own
// BenchmarkSharedIndexInformer (createPods), kept identical so that its
// figures can be compared with client-go's.
func MinimalPods(count int, ns string, rng *rand.Rand) []corev1.Pod {
	pods := make([]corev1.Pod, count)
	for i := range pods {
		pods[i] = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: randString(rng, 20), Namespace: ns}}
	}
	return pods
}

// PodOptions shapes a list of realistic pods.
type PodOptions struct {
	// Namespaces and Nodes are how many namespaces and nodes the pods
	// spread over; 0 means 1.
	Namespaces, Nodes int
	// Deployments is how many pod templates (deployments) the pods come
	// from; 0 means 100. Pods of one deployment share labels, images, env
	// and the like, as real ones do.
	Deployments int
	// ManagedFields adds the managedFields entries that the API server
	// records for a pod created by a ReplicaSet and run by a kubelet.
	ManagedFields bool
	// Seed makes the list reproducible.
	Seed uint64
}

// PodList is a reproducible list of realistic pods, about 2.5 KB each as
// JSON without managedFields and 4 KB with them: six labels, four
// annotations, an owner reference, two containers with env, ports,
// resources, probes and volume mounts, a projected service account volume,
// and a running status with conditions, container statuses and IPs.
//
// Fresh returns a new copy each time, the way a decoder returns new objects
// for every list response.
type PodList struct {
	templates []corev1.Pod // one per deployment
	items     []podIdentity
	rv        int
}

// podIdentity is what tells a pod apart from the others of its deployment.
type podIdentity struct {
	deployment int
	name, uid  string
	namespace  string
	node       string
	podIP      string
	hostIP     string
	containers [2]string // container IDs
	rv         string
	age        time.Duration // how long after its deployment the pod started
}

// NewPodList returns count pods shaped by o.
func NewPodList(count int, o PodOptions) *PodList {
	o.Namespaces = max(o.Namespaces, 1)
	o.Nodes = max(o.Nodes, 1)
	if o.Deployments == 0 {
		o.Deployments = 100
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6b756265))
	l := &PodList{rv: 1000 + count}
	namespaces := make([]string, o.Namespaces)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("team-%02d", i)
	}
	nodes := make([]string, o.Nodes)
	hostIPs := make([]string, o.Nodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("ip-10-%d-%d-%d.eu-west-1.compute.internal", i/65536%256, i/256%256, i%256)
		hostIPs[i] = fmt.Sprintf("10.%d.%d.%d", i/65536%256, i/256%256, i%256)
	}
	for d := range o.Deployments {
		l.templates = append(l.templates, podTemplate(d, o.ManagedFields, rng))
	}
	l.items = make([]podIdentity, count)
	taken := make(map[string]bool, count) // generated names may collide
	for i := range l.items {
		d := i % o.Deployments
		node := rng.IntN(o.Nodes)
		tmpl := &l.templates[d]
		ns := namespaces[i%o.Namespaces]
		name := tmpl.GenerateName + randString(rng, 5)
		for taken[ns+"/"+name] {
			name = tmpl.GenerateName + randString(rng, 5)
		}
		taken[ns+"/"+name] = true
		l.items[i] = podIdentity{
			deployment: d,
			name:       name,
			uid:        string(newUID(rng)),
			namespace:  ns,
			node:       nodes[node],
			hostIP:     hostIPs[node],
			podIP:      fmt.Sprintf("100.%d.%d.%d", 64+i/65536%64, i/256%256, i%256),
			containers: [2]string{"containerd://" + randHex(rng, 64), "containerd://" + randHex(rng, 64)},
			rv:         strconv.Itoa(1000 + i),
			age:        time.Duration(rng.IntN(7*24*3600)) * time.Second,
		}
	}
	return l
}

// Len returns the number of pods.
func (l *PodList) Len() int { return len(l.items) }

// ResourceVersion is the list's resource version.
func (l *PodList) ResourceVersion() string { return strconv.Itoa(l.rv) }

// Fresh returns a new list of new objects with the same content and
// resource versions every time. Strings that differ from pod to pod (name,
// UID, node, IPs, container IDs) are distinct allocations in every list, as
// a decoder makes them; strings that pods of one deployment share are
// shared with the template, as a deep copy shares them.
func (l *PodList) Fresh() *corev1.PodList {
	out := &corev1.PodList{
		TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: l.ResourceVersion()},
		Items:    make([]corev1.Pod, len(l.items)),
	}
	for i := range l.items {
		l.build(i, &out.Items[i])
	}
	return out
}

// FreshSubset is Fresh with only the pods of the given indexes, in that
// order: what a server that filters sends.
func (l *PodList) FreshSubset(indexes []int) *corev1.PodList {
	out := &corev1.PodList{
		TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: l.ResourceVersion()},
		Items:    make([]corev1.Pod, len(indexes)),
	}
	for j, i := range indexes {
		l.build(i, &out.Items[j])
	}
	return out
}

// Pod returns a new copy of pod i.
func (l *PodList) Pod(i int) *corev1.Pod {
	p := &corev1.Pod{}
	l.build(i, p)
	return p
}

// Key returns the namespace and name of pod i.
func (l *PodList) Key(i int) (namespace, name string) {
	return l.items[i].namespace, l.items[i].name
}

// Node returns the node of pod i.
func (l *PodList) Node(i int) string { return l.items[i].node }

// build writes pod i into p.
func (l *PodList) build(i int, p *corev1.Pod) {
	id := &l.items[i]
	l.templates[id.deployment].DeepCopyInto(p)
	p.Name = clone(id.name)
	p.Namespace = clone(id.namespace)
	p.UID = types.UID(clone(id.uid))
	p.ResourceVersion = clone(id.rv)
	p.Spec.NodeName = clone(id.node)
	p.Status.HostIP = clone(id.hostIP)
	p.Status.HostIPs = []corev1.HostIP{{IP: p.Status.HostIP}}
	p.Status.PodIP = clone(id.podIP)
	p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	for c := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[c].ContainerID = clone(id.containers[c])
	}
	shiftTimes(p, id.age)
}

// shiftTimes moves the times of p, a copy of its template, by d: pods of a
// deployment are created, started and made ready at different times, which
// their conditions, statuses and managedFields entries record.
func shiftTimes(p *corev1.Pod, d time.Duration) {
	shift := func(t *metav1.Time) { t.Time = t.Add(d) }
	shift(&p.CreationTimestamp)
	if p.Status.StartTime != nil {
		shift(p.Status.StartTime)
	}
	for i := range p.Status.Conditions {
		shift(&p.Status.Conditions[i].LastTransitionTime)
	}
	for i := range p.Status.ContainerStatuses {
		if r := p.Status.ContainerStatuses[i].State.Running; r != nil {
			shift(&r.StartedAt)
		}
	}
	for i := range p.ManagedFields {
		if t := p.ManagedFields[i].Time; t != nil {
			shift(t)
		}
	}
}

// clone copies s into a new allocation, as decoding it would.
func clone(s string) string { return string([]byte(s)) }

// Modified returns a copy of p as an update would send it: a new resource
// version and a changed annotation.
func Modified(p *corev1.Pod, rv int) *corev1.Pod {
	q := p.DeepCopy()
	q.ResourceVersion = strconv.Itoa(rv)
	if q.Annotations == nil {
		q.Annotations = map[string]string{}
	}
	q.Annotations["bench/revision"] = q.ResourceVersion
	return q
}

var epoch = time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC)

// podTemplate returns the pod that deployment d's ReplicaSet creates,
// without the fields that tell its pods apart.
func podTemplate(d int, managedFields bool, rng *rand.Rand) corev1.Pod {
	app := fmt.Sprintf("svc-%03d", d)
	hash := randString(rng, 10)
	rsName := app + "-" + hash
	created := metav1.NewTime(epoch.Add(time.Duration(d) * time.Minute))
	started := metav1.NewTime(created.Add(3 * time.Second))
	ready := metav1.NewTime(created.Add(9 * time.Second))
	image := fmt.Sprintf("registry.example.com/platform/%s:v1.%d.%d", app, d%7, d%13)
	sidecar := "registry.example.com/platform/envoy-proxy:v1.31.2"
	tokenVolume := "kube-api-access-" + randString(rng, 5)

	env := func(extra ...corev1.EnvVar) []corev1.EnvVar {
		return append([]corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		}, extra...)
	}
	mounts := func(extra ...corev1.VolumeMount) []corev1.VolumeMount {
		return append(extra, corev1.VolumeMount{Name: tokenVolume, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
	}
	resources := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
		}
	}
	containerStatus := func(name, image string) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name:         name,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Ready:        true,
			Image:        image,
			ImageID:      image[:strings.LastIndexByte(image, ':')] + "@sha256:" + randHex(rng, 64),
			Started:      ptr.To(true),
			RestartCount: 0,
		}
	}
	condition := func(t corev1.PodConditionType, at metav1.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at}
	}

	p := corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:      rsName + "-",
			CreationTimestamp: created,
			Labels: map[string]string{
				"app.kubernetes.io/name":      app,
				"app.kubernetes.io/instance":  app + "-prod",
				"app.kubernetes.io/version":   fmt.Sprintf("1.%d.%d", d%7, d%13),
				"app.kubernetes.io/component": []string{"api", "worker", "frontend"}[d%3],
				"pod-template-hash":           hash,
				"team":                        fmt.Sprintf("team-%d", d%10),
			},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt": created.Format(time.RFC3339),
				"prometheus.io/scrape":              "true",
				"prometheus.io/port":                "9090",
				"checksum/config":                   randHex(rng, 64),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "apps/v1",
				Kind:               "ReplicaSet",
				Name:               rsName,
				UID:                newUID(rng),
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}, DefaultMode: ptr.To[int32](420)}}},
				{Name: tokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: ptr.To[int32](420),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					},
				}}},
			},
			Containers: []corev1.Container{
				{
					Name:  "app",
					Image: image,
					Ports: []corev1.ContainerPort{
						{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
						{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
					},
					Env:                      env(corev1.EnvVar{Name: "CONFIG_PATH", Value: "/etc/" + app + "/config.yaml"}),
					Resources:                resources("250m", "512Mi"),
					VolumeMounts:             mounts(corev1.VolumeMount{Name: "config", ReadOnly: true, MountPath: "/etc/" + app}),
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy:          corev1.PullIfNotPresent,
				},
				{
					Name:                     "proxy",
					Image:                    sidecar,
					Ports:                    []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001, Protocol: corev1.ProtocolTCP}},
					Env:                      env(),
					Resources:                resources("100m", "128Mi"),
					VolumeMounts:             mounts(),
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy:          corev1.PullIfNotPresent,
				},
			},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            app,
			DeprecatedServiceAccount:      app,
			SchedulerName:                 "default-scheduler",
			Priority:                      ptr.To[int32](0),
			EnableServiceLinks:            ptr.To(true),
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				condition(corev1.PodInitialized, created),
				condition(corev1.PodReady, ready),
				condition(corev1.ContainersReady, ready),
				condition(corev1.PodScheduled, created),
			},
			StartTime:         &created,
			ContainerStatuses: []corev1.ContainerStatus{containerStatus("app", image), containerStatus("proxy", sidecar)},
			QOSClass:          corev1.PodQOSBurstable,
		},
	}
	if managedFields {
		p.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: &created, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(specFields(app))},
			{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: &ready, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(statusFields), Subresource: "status"},
		}
	}
	return p
}

// specFields is the FieldsV1 of the fields a ReplicaSet controller sets.
func specFields(app string) string {
	return `{"f:metadata":{"f:annotations":{".":{},"f:checksum/config":{},"f:kubectl.kubernetes.io/restartedAt":{},` +
		`"f:prometheus.io/port":{},"f:prometheus.io/scrape":{}},"f:generateName":{},"f:labels":{".":{},` +
		`"f:app.kubernetes.io/component":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/name":{},` +
		`"f:app.kubernetes.io/version":{},"f:pod-template-hash":{},"f:team":{}},"f:ownerReferences":{".":{},` +
		`"k:{\"uid\":\"` + app + `\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{".":{},` +
		`"k:{\"name\":\"CONFIG_PATH\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"LOG_LEVEL\"}":{".":{},"f:name":{},"f:value":{}},` +
		`"k:{\"name\":\"POD_NAME\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:fieldRef":{}}},` +
		`"k:{\"name\":\"POD_NAMESPACE\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:fieldRef":{}}}},` +
		`"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{".":{},"f:failureThreshold":{},"f:httpGet":{".":{},"f:path":{},` +
		`"f:port":{},"f:scheme":{}},"f:periodSeconds":{},"f:successThreshold":{},"f:timeoutSeconds":{}},"f:name":{},` +
		`"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}},` +
		`"k:{\"containerPort\":9090,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},` +
		`"f:readinessProbe":{".":{},"f:failureThreshold":{},"f:httpGet":{".":{},"f:path":{},"f:port":{},"f:scheme":{}},` +
		`"f:periodSeconds":{},"f:successThreshold":{},"f:timeoutSeconds":{}},"f:resources":{".":{},"f:limits":{".":{},"f:memory":{}},` +
		`"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},` +
		`"f:volumeMounts":{".":{},"k:{\"mountPath\":\"/etc/` + app + `\"}":{".":{},"f:mountPath":{},"f:name":{},"f:readOnly":{}}}},` +
		`"k:{\"name\":\"proxy\"}":{".":{},"f:env":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{},"f:resources":{},` +
		`"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},` +
		`"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{".":{},"f:fsGroup":{},"f:runAsNonRoot":{}},` +
		`"f:serviceAccount":{},"f:serviceAccountName":{},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},` +
		`"k:{\"name\":\"config\"}":{".":{},"f:configMap":{".":{},"f:defaultMode":{},"f:name":{}},"f:name":{}}}}}`
}

// statusFields is the FieldsV1 of the status a kubelet writes.
const statusFields = `{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},` +
	`"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},` +
	`"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PodReadyToStartContainers\"}":{".":{},` +
	`"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},` +
	`"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},` +
	`"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"100.64.0.1\"}":{".":{},` +
	`"f:ip":{}}},"f:startTime":{}}}`

const letters = "bcdfghjklmnpqrstvwxz2456789"

// randString returns n characters of the alphabet that the API server uses
// for generated names.
func randString(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

func randHex(rng *rand.Rand, n int) string {
	const hex = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = hex[rng.IntN(16)]
	}
	return string(b)
}

func newUID(rng *rand.Rand) types.UID {
	h := randHex(rng, 32)
	return types.UID(h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:])
}
