package benchfixtures

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ApplicationGV is the group version of Application, Argo CD's.
var ApplicationGV = schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}

// ApplicationResource is the resource of Application.
var ApplicationResource = ApplicationGV.WithResource("applications")

// Application is a custom resource modelled on Argo CD's Application (a
// subset of its fields, with their json names): a source, a destination,
// a sync policy, and a status with resources, history and conditions.
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ApplicationSpec   `json:"spec"`
	Status            ApplicationStatus `json:"status,omitempty"`
}

// ApplicationList is a list of applications.
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Application `json:"items"`
}

// ApplicationSpec is what an application deploys, and where.
type ApplicationSpec struct {
	Source               *ApplicationSource     `json:"source,omitempty"`
	Destination          ApplicationDestination `json:"destination"`
	Project              string                 `json:"project"`
	SyncPolicy           *SyncPolicy            `json:"syncPolicy,omitempty"`
	IgnoreDifferences    []IgnoreDifferences    `json:"ignoreDifferences,omitempty"`
	RevisionHistoryLimit *int64                 `json:"revisionHistoryLimit,omitempty"`
}

// ApplicationSource is a Helm chart in a Git repository.
type ApplicationSource struct {
	RepoURL        string           `json:"repoURL"`
	Path           string           `json:"path,omitempty"`
	TargetRevision string           `json:"targetRevision,omitempty"`
	Helm           *ApplicationHelm `json:"helm,omitempty"`
}

// ApplicationHelm holds Helm parameters.
type ApplicationHelm struct {
	ValueFiles  []string        `json:"valueFiles,omitempty"`
	Parameters  []HelmParameter `json:"parameters,omitempty"`
	ReleaseName string          `json:"releaseName,omitempty"`
}

// HelmParameter is one Helm value.
type HelmParameter struct {
	Name        string `json:"name,omitempty"`
	Value       string `json:"value,omitempty"`
	ForceString bool   `json:"forceString,omitempty"`
}

// ApplicationDestination is a cluster and namespace.
type ApplicationDestination struct {
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// SyncPolicy is how an application syncs.
type SyncPolicy struct {
	Automated   *SyncPolicyAutomated `json:"automated,omitempty"`
	SyncOptions []string             `json:"syncOptions,omitempty"`
	Retry       *RetryStrategy       `json:"retry,omitempty"`
}

// SyncPolicyAutomated is automated sync.
type SyncPolicyAutomated struct {
	Prune    bool `json:"prune,omitempty"`
	SelfHeal bool `json:"selfHeal,omitempty"`
}

// RetryStrategy is how failed syncs are retried.
type RetryStrategy struct {
	Limit   int64    `json:"limit,omitempty"`
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff is the delay between retries.
type Backoff struct {
	Duration    string `json:"duration,omitempty"`
	Factor      *int64 `json:"factor,omitempty"`
	MaxDuration string `json:"maxDuration,omitempty"`
}

// IgnoreDifferences names fields a diff ignores.
type IgnoreDifferences struct {
	Group        string   `json:"group,omitempty"`
	Kind         string   `json:"kind"`
	JSONPointers []string `json:"jsonPointers,omitempty"`
}

// ApplicationStatus is what the controller observed.
type ApplicationStatus struct {
	Resources    []ResourceStatus       `json:"resources,omitempty"`
	Sync         SyncStatus             `json:"sync,omitempty"`
	Health       HealthStatus           `json:"health,omitempty"`
	History      []RevisionHistory      `json:"history,omitempty"`
	Conditions   []ApplicationCondition `json:"conditions,omitempty"`
	ReconciledAt *metav1.Time           `json:"reconciledAt,omitempty"`
	SourceType   string                 `json:"sourceType,omitempty"`
	Summary      ApplicationSummary     `json:"summary,omitempty"`
}

// ResourceStatus is one managed resource.
type ResourceStatus struct {
	Group     string        `json:"group,omitempty"`
	Version   string        `json:"version,omitempty"`
	Kind      string        `json:"kind,omitempty"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name,omitempty"`
	Status    string        `json:"status,omitempty"`
	Health    *HealthStatus `json:"health,omitempty"`
}

// SyncStatus is the last comparison with the source.
type SyncStatus struct {
	Status     string     `json:"status"`
	ComparedTo ComparedTo `json:"comparedTo,omitempty"`
	Revision   string     `json:"revision,omitempty"`
}

// ComparedTo is what a comparison compared with.
type ComparedTo struct {
	Source      ApplicationSource      `json:"source"`
	Destination ApplicationDestination `json:"destination"`
}

// HealthStatus is a health and why.
type HealthStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// RevisionHistory is one past deployment.
type RevisionHistory struct {
	Revision        string            `json:"revision,omitempty"`
	DeployedAt      metav1.Time       `json:"deployedAt"`
	ID              int64             `json:"id"`
	Source          ApplicationSource `json:"source,omitempty"`
	DeployStartedAt *metav1.Time      `json:"deployStartedAt,omitempty"`
}

// ApplicationCondition is a condition of an application.
type ApplicationCondition struct {
	Type               string       `json:"type"`
	Message            string       `json:"message"`
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// ApplicationSummary lists what an application exposes and runs.
type ApplicationSummary struct {
	ExternalURLs []string `json:"externalURLs,omitempty"`
	Images       []string `json:"images,omitempty"`
}

// DeepCopyObject copies a through JSON: enough for benchmarks, which never
// copy on a measured path.
func (a *Application) DeepCopyObject() runtime.Object { return jsonCopy(a) }

// DeepCopyObject copies l through JSON.
func (l *ApplicationList) DeepCopyObject() runtime.Object { return jsonCopy(l) }

func jsonCopy[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c := new(T)
	if err := json.Unmarshal(b, c); err != nil {
		panic(err)
	}
	return c
}

// AddApplications registers Application and ApplicationList in s.
func AddApplications(s *runtime.Scheme) {
	s.AddKnownTypes(ApplicationGV, &Application{}, &ApplicationList{})
	metav1.AddToGroupVersion(s, ApplicationGV)
}

// NewApplication returns the i-th of a fleet of applications, the same
// for the same i and seed. Teams, repositories, clusters, policies and
// statuses repeat across applications; names, UIDs, resource versions,
// paths, image tags and revisions are unique. Like every object an API
// server serves, each has managed fields: its creator's and its
// controller's, whose field sets repeat and whose times do not.
func NewApplication(i int, seed uint64) *Application {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	team := fmt.Sprintf("team-%02d", i%40)
	svc := fmt.Sprintf("%s-svc-%06d", team, i)
	repo := fmt.Sprintf("https://git.example.com/platform/%s-deployments.git", team)
	revision := randHex(rng, 40)
	tag := randHex(rng, 12)
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	reconciled := metav1.NewTime(created.Add(240 * time.Hour))
	deployed := metav1.NewTime(created.Add(time.Hour))
	limit, factor := int64(10), int64(2)
	source := ApplicationSource{
		RepoURL: repo, Path: "services/" + svc, TargetRevision: "main",
		Helm: &ApplicationHelm{
			ValueFiles: []string{"values.yaml", "values-production.yaml"},
			Parameters: []HelmParameter{
				{Name: "image.repository", Value: "registry.example.com/" + team + "/" + svc},
				{Name: "image.tag", Value: tag},
				{Name: "replicaCount", Value: strconv.Itoa(1 + i%3), ForceString: true},
			},
			ReleaseName: svc,
		},
	}
	dest := ApplicationDestination{Server: fmt.Sprintf("https://cluster-%d.example.com:6443", i%4), Namespace: team}
	healthy := &HealthStatus{Status: "Healthy"}
	a := &Application{
		TypeMeta: metav1.TypeMeta{Kind: "Application", APIVersion: ApplicationGV.String()},
		ObjectMeta: metav1.ObjectMeta{
			Name: svc, Namespace: "argocd", UID: newUID(rng), ResourceVersion: strconv.Itoa(1000 + i), Generation: int64(2 + i%5),
			CreationTimestamp: metav1.NewTime(created),
			Labels:            map[string]string{"team": team, "environment": "production", "app.kubernetes.io/part-of": team + "-platform"},
			Annotations:       map[string]string{"notifications.argoproj.io/subscribe.on-sync-failed.slack": team + "-alerts"},
			Finalizers:        []string{"resources-finalizer.argocd.argoproj.io"},
		},
		Spec: ApplicationSpec{
			Source: &source, Destination: dest, Project: team,
			SyncPolicy: &SyncPolicy{
				Automated:   &SyncPolicyAutomated{Prune: true, SelfHeal: true},
				SyncOptions: []string{"CreateNamespace=true", "ServerSideApply=true"},
				Retry:       &RetryStrategy{Limit: 5, Backoff: &Backoff{Duration: "5s", Factor: &factor, MaxDuration: "3m"}},
			},
			IgnoreDifferences:    []IgnoreDifferences{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}},
			RevisionHistoryLimit: &limit,
		},
		Status: ApplicationStatus{
			Resources: []ResourceStatus{
				{Version: "v1", Kind: "ConfigMap", Namespace: team, Name: svc + "-config", Status: "Synced"},
				{Version: "v1", Kind: "Service", Namespace: team, Name: svc, Status: "Synced", Health: healthy},
				{Version: "v1", Kind: "ServiceAccount", Namespace: team, Name: svc, Status: "Synced"},
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: team, Name: svc, Status: "Synced", Health: healthy},
			},
			Sync:   SyncStatus{Status: "Synced", ComparedTo: ComparedTo{Source: source, Destination: dest}, Revision: revision},
			Health: HealthStatus{Status: "Healthy"},
			History: []RevisionHistory{
				{Revision: randHex(rng, 40), DeployedAt: deployed, ID: 1, Source: source, DeployStartedAt: &deployed},
				{Revision: revision, DeployedAt: reconciled, ID: 2, Source: source, DeployStartedAt: &reconciled},
			},
			ReconciledAt: &reconciled,
			SourceType:   "Helm",
			Summary: ApplicationSummary{
				ExternalURLs: []string{"https://" + svc + ".apps.example.com"},
				Images:       []string{"registry.example.com/" + team + "/" + svc + ":" + tag},
			},
		},
	}
	statusFields := applicationStatusFields
	if i%10 == 0 {
		a.Status.Conditions = []ApplicationCondition{{Type: "SyncError", Message: "Failed sync attempt: one or more objects failed to apply, reason: admission webhook denied the request", LastTransitionTime: &reconciled}}
		statusFields = applicationStatusFieldsWithConditions
	}
	a.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "argocd-server", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: ApplicationGV.String(),
			Time: &a.CreationTimestamp, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(applicationSpecFields)}},
		{Manager: "argocd-application-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: ApplicationGV.String(),
			Time: &reconciled, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(statusFields)}},
	}
	return a
}

// The managed fields an API server records for an application: the
// fields its creator set (metadata and spec), and those the controller
// updates (status; conditions only when it has some). Lists without list
// keys are atomic, so their fields are owned whole.
const (
	applicationSpecFields = `{"f:metadata":{"f:annotations":{".":{},"f:notifications.argoproj.io/subscribe.on-sync-failed.slack":{}},` +
		`"f:finalizers":{".":{},"v:\"resources-finalizer.argocd.argoproj.io\"":{}},` +
		`"f:labels":{".":{},"f:app.kubernetes.io/part-of":{},"f:environment":{},"f:team":{}}},` +
		`"f:spec":{".":{},"f:destination":{".":{},"f:namespace":{},"f:server":{}},"f:ignoreDifferences":{},"f:project":{},"f:revisionHistoryLimit":{},` +
		`"f:source":{".":{},"f:helm":{".":{},"f:parameters":{},"f:releaseName":{},"f:valueFiles":{}},"f:path":{},"f:repoURL":{},"f:targetRevision":{}},` +
		`"f:syncPolicy":{".":{},"f:automated":{".":{},"f:prune":{},"f:selfHeal":{}},` +
		`"f:retry":{".":{},"f:backoff":{".":{},"f:duration":{},"f:factor":{},"f:maxDuration":{}},"f:limit":{}},"f:syncOptions":{}}}}`
	applicationStatusFieldsStart = `{"f:status":{".":{},`
	applicationStatusFieldsEnd   = `"f:health":{".":{},"f:status":{}},"f:history":{},"f:reconciledAt":{},"f:resources":{},"f:sourceType":{},` +
		`"f:summary":{".":{},"f:externalURLs":{},"f:images":{}},` +
		`"f:sync":{".":{},"f:comparedTo":{".":{},"f:destination":{".":{},"f:namespace":{},"f:server":{}},` +
		`"f:source":{".":{},"f:helm":{".":{},"f:parameters":{},"f:releaseName":{},"f:valueFiles":{}},"f:path":{},"f:repoURL":{},"f:targetRevision":{}}},` +
		`"f:revision":{},"f:status":{}}}}`
	applicationStatusFields               = applicationStatusFieldsStart + applicationStatusFieldsEnd
	applicationStatusFieldsWithConditions = applicationStatusFieldsStart + `"f:conditions":{},` + applicationStatusFieldsEnd
)
