// Package decodedtest checks, for the tests of the decoders, how they
// contain an object that does not decode. Only tests import it.
package decodedtest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/decoded"
)

// CheckContained checks how a decoder treated one object, which a
// reference decoder (the generated code, sigs.k8s.io/json) decodes or not
// (wantErr): decoded as the middle item of a list between items named
// first and last (l, err: what its DecodeList returned), and as a watch
// event's object (eventErr: what its event decoder returned). An object
// the reference decodes is the list's middle item, and the event's. One
// it does not is either named alike in the list's Undecodable and by the
// event decoder, the list keeping first and last, or fails both, the
// list's error naming item 1. It returns the Undecodable named, nil if
// none.
func CheckContained[T runtime.Object](t testing.TB, wantErr error, l *decoded.List[T], err, eventErr error, name func(T) string) *decoded.Undecodable {
	t.Helper()
	u, isUndecodable := errors.AsType[*decoded.Undecodable](eventErr)
	switch {
	case wantErr == nil:
		require.NoError(t, err)
		require.Len(t, l.Items, 3)
		require.Empty(t, l.Undecodable)
		require.NoError(t, eventErr)
		return nil
	case err == nil:
		require.Len(t, l.Items, 2)
		require.Equal(t, "first", name(l.Items[0]))
		require.Equal(t, "last", name(l.Items[1]))
		require.Len(t, l.Undecodable, 1)
		require.NotEmpty(t, l.Undecodable[0].Name)
		require.Error(t, l.Undecodable[0].Err)
		require.True(t, isUndecodable, "the list names the item, the watch does not: %v", eventErr)
		// Alike but for the error, whose offsets, if any, count from the
		// start of the list in one and of the object in the other.
		inList, inEvent := *l.Undecodable[0], *u
		inList.Err, inEvent.Err = nil, nil
		require.Equal(t, inList, inEvent)
		return u
	default:
		require.ErrorContains(t, err, "item 1")
		require.Error(t, eventErr)
		require.False(t, isUndecodable, "the watch names the item, the list does not: %v", eventErr)
		return nil
	}
}
