package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// A cache that cannot sync because RBAC forbids it says so at once:
// WaitForSync returns the 403 within seconds, not at its deadline.
func TestForbiddenIsReportedPromptly(t *testing.T) {
	tests := []struct {
		name  string
		verbs []string
	}{
		{"neither list nor watch", nil},
		{"list but not watch", []string{"list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, admin, ns, ctx := sharedServer(t, 2*time.Minute)
			if tt.verbs != nil {
				_, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
					ObjectMeta: metav1.ObjectMeta{Name: "cm"},
					Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: tt.verbs}},
				}, metav1.CreateOptions{})
				require.NoError(t, err)
				_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "cm"},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm"},
					Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: testenv.RestrictedUser}},
				}, metav1.CreateOptions{})
				require.NoError(t, err)
				// Wait until the binding is in force.
				testutil.EventuallyWithin(t, 30*time.Second, func() bool {
					_, err := clientset(t, env.RestrictedConfig()).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
					return err == nil
				}, "list allowed")
			}

			f := informers.NewFactoryWith(clientset(t, env.RestrictedConfig()), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns)}})
			cms := informers.Informer[*corev1.ConfigMap](f)
			testutil.StartFactory(t, f)
			start := time.Now()
			err := informers.WaitForSync(ctx, f)
			elapsed := time.Since(start)
			require.Error(t, err)
			assert.Less(t, elapsed, 10*time.Second, "prompt")
			assert.True(t, apierrors.IsForbidden(err), "%v", err)
			assert.Contains(t, err.Error(), "configmaps.v1")
			assert.Contains(t, err.Error(), testenv.RestrictedUser)
			assert.False(t, cms.HasSynced())
			t.Logf("after %v: %v", elapsed.Round(time.Millisecond), err)
		})
	}
}
