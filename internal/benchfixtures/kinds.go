package benchfixtures

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// randomBytes returns n bytes of rng's.
func randomBytes(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// kindMeta returns the type and object metadata of the i-th object of a
// kind: a UID, resource version and creation time of its own.
func kindMeta(kind, apiVersion, name, ns string, i int) (metav1.TypeMeta, metav1.ObjectMeta) {
	return metav1.TypeMeta{Kind: kind, APIVersion: apiVersion}, metav1.ObjectMeta{
		Name: name, Namespace: ns, UID: types.UID(fmt.Sprintf("8d2e6b1c-0000-4000-8000-%012d", i)),
		ResourceVersion: fmt.Sprint(200000 + i), CreationTimestamp: metav1.Unix(1700000000+int64(i), 0),
	}
}

// RandomConfigMap returns the i-th of config maps in 50 namespaces that
// hold 4 keys of 1.5 KB of random bytes each, 2 KB in base64: data no two
// objects share.
func RandomConfigMap(i int) *corev1.ConfigMap {
	rng := rand.New(rand.NewPCG(uint64(i), 1))
	tm, om := kindMeta("ConfigMap", "v1", fmt.Sprintf("data-%d", i), fmt.Sprintf("team-%02d", i%50), i)
	cm := &corev1.ConfigMap{TypeMeta: tm, ObjectMeta: om, Data: map[string]string{}}
	for k := range 4 {
		cm.Data[fmt.Sprintf("part-%d", k)] = base64.StdEncoding.EncodeToString(randomBytes(rng, 1536))
	}
	return cm
}

// clusterCA is the cluster's CA certificate, as kube-root-ca.crt holds it
// in every namespace and service account tokens' secrets hold it.
var clusterCA = "-----BEGIN CERTIFICATE-----\n" + base64.StdEncoding.EncodeToString(randomBytes(rand.New(rand.NewPCG(7, 7)), 800)) + "\n-----END CERTIFICATE-----\n"

// RealisticConfigMap returns the i-th of config maps as a cluster has
// them, two per namespace: kube-root-ca.crt (the cluster's CA, the same
// in every namespace) for even i, and for odd i the settings of one of 40
// applications, which differ by its name and namespace.
func RealisticConfigMap(i int) *corev1.ConfigMap {
	ns := fmt.Sprintf("team-%03d", i/2)
	if i%2 == 0 {
		tm, om := kindMeta("ConfigMap", "v1", "kube-root-ca.crt", ns, i)
		om.Annotations = map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}
		return &corev1.ConfigMap{TypeMeta: tm, ObjectMeta: om, Data: map[string]string{"ca.crt": clusterCA}}
	}
	app := fmt.Sprintf("app-%d", i%40)
	tm, om := kindMeta("ConfigMap", "v1", app+"-config", ns, i)
	om.Labels = map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/managed-by": "Helm"}
	return &corev1.ConfigMap{TypeMeta: tm, ObjectMeta: om, Data: map[string]string{
		"LOG_LEVEL": "info", "HTTP_PORT": "8080", "METRICS_PORT": "9090",
		"DATABASE_URL": fmt.Sprintf("postgres://%s@db.%s.svc:5432/%s", app, ns, app),
		"config.yaml":  fmt.Sprintf("server:\n  port: 8080\n  name: %s\nfeatures:\n  tracing: true\n  cache: redis://redis.%s.svc:6379\n", app, ns),
	}}
}

// Secret returns the i-th of secrets in 50 namespaces: a service account
// token (900 random bytes, its namespace and the cluster's CA) for even
// i, a TLS certificate and key (random, 1.2 KB and 1.7 KB) for odd i.
func Secret(i int) *corev1.Secret {
	rng := rand.New(rand.NewPCG(uint64(i), 2))
	ns := fmt.Sprintf("team-%02d", i%50)
	if i%2 == 0 {
		tm, om := kindMeta("Secret", "v1", fmt.Sprintf("token-%d", i), ns, i)
		om.Annotations = map[string]string{"kubernetes.io/service-account.name": fmt.Sprintf("sa-%d", i)}
		return &corev1.Secret{TypeMeta: tm, ObjectMeta: om, Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{
			"token": randomBytes(rng, 900), "namespace": []byte(ns), "ca.crt": []byte(clusterCA),
		}}
	}
	tm, om := kindMeta("Secret", "v1", fmt.Sprintf("tls-%d", i), ns, i)
	return &corev1.Secret{TypeMeta: tm, ObjectMeta: om, Type: corev1.SecretTypeTLS, Data: map[string][]byte{
		"tls.crt": randomBytes(rng, 1200), "tls.key": randomBytes(rng, 1700),
	}}
}

// Deployment returns the i-th of deployments of 100 applications in 50
// namespaces: each application's image, name and labels are its own, the
// rest (ports, resources, environment, status) is the same for all.
func Deployment(i int) *appsv1.Deployment {
	app := fmt.Sprintf("app-%d", i%100)
	tm, om := kindMeta("Deployment", "apps/v1", fmt.Sprintf("%s-%d", app, i), fmt.Sprintf("team-%02d", i%50), i)
	labels := map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop"}
	om.Labels, om.Generation = labels, 3
	replicas := int32(3)
	return &appsv1.Deployment{TypeMeta: tm, ObjectMeta: om,
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: app, Image: fmt.Sprintf("registry.example.com/shop/%s:v1.%d", app, i%7),
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
					Env:       []corev1.EnvVar{{Name: "APP", Value: app}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				}}},
			},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, UpdatedReplicas: 3,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}}},
	}
}
