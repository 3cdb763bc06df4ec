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

// tooLargeMessage is how servers before 1.18.6 say that a resource version
// is newer than any they know, in the status message (before 1.17) or in a
// cause's message (1.17.0 to 1.18.5), of a 504 Timeout.
const tooLargeMessage = "Too large resource version"

// isTooLargeResourceVersion reports whether err says the resource version
// is newer than the server knows, in any of the forms servers have used.
func isTooLargeResourceVersion(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsTimeout(err) || !errors.As(err, &status) {
		return false
	}
	st := status.Status()
	if st.Details != nil {
		for _, cause := range st.Details.Causes {
			if cause.Message == tooLargeMessage {
				return true
			}
		}
	}
	return strings.Contains(st.Message, tooLargeMessage)
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
