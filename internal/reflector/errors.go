package reflector

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// errShortWatch is returned when a watch closes at once without events,
// which usually means the server or a proxy is failing.
var errShortWatch = errors.New("watch closed within a second without events")

// IsExpired reports whether err says the resource version is too old (410).
func IsExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersion reports whether err says the resource version
// is newer than the server knows.
func isTooLargeResourceVersion(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsTimeout(err) || !errors.As(err, &status) {
		return false
	}
	return strings.Contains(status.Status().Message, "Too large resource version")
}

// isRetriable reports whether a failed watch should be retried from the same
// resource version after a delay rather than relisting: the server is
// unreachable or asks to slow down.
func isRetriable(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}

// refusesWatchList reports whether err says the server does not serve
// watch-list requests at all, so asking again is pointless.
func refusesWatchList(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err)
}
