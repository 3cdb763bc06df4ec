package informers_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubetyped/informers"
)

// NotSyncedError unwraps to the errors it holds and never to a nil one, so
// that errors.Is and errors.As walk it safely.
func TestNotSyncedErrorUnwrap(t *testing.T) {
	forbidden := apierrors.NewForbidden(corev1.Resource("secrets"), "", errors.New("no"))
	tests := map[string]struct {
		err  *informers.NotSyncedError
		want []error
	}{
		"neither":    {err: &informers.NotSyncedError{Resource: "secrets.v1"}},
		"last error": {err: &informers.NotSyncedError{Resource: "secrets.v1", LastErr: forbidden}, want: []error{forbidden}},
		"wait ended": {err: &informers.NotSyncedError{Resource: "secrets.v1", Err: context.DeadlineExceeded}, want: []error{context.DeadlineExceeded}},
		"both":       {err: &informers.NotSyncedError{Resource: "secrets.v1", LastErr: forbidden, Err: context.Canceled}, want: []error{forbidden, context.Canceled}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := tt.err.Unwrap()
			assert.Equal(t, tt.want, got)
			for _, e := range got {
				assert.NotNil(t, e)
			}
			assert.Equal(t, tt.err.LastErr != nil, apierrors.IsForbidden(tt.err))
			assert.Contains(t, tt.err.Error(), "secrets.v1")
		})
	}
}
