package benchfixtures

import (
	"fmt"

	clientfeatures "k8s.io/client-go/features"
)

// SetClientGoWatchList sets client-go's WatchListClient feature gate,
// which its reflectors read when they are created, as client-go's
// features/testing does, through the gates' Set method: unlike the
// KUBE_FEATURE_* variables, which client-go reads once, on its first gate
// check, it works at any time, and it takes precedence over them.
func SetClientGoWatchList(on bool) error {
	gates, ok := clientfeatures.FeatureGates().(interface {
		Set(clientfeatures.Feature, bool) error
	})
	if !ok {
		return fmt.Errorf("client-go's feature gates (%T) cannot be set", clientfeatures.FeatureGates())
	}
	return gates.Set(clientfeatures.WatchListClient, on)
}
