package protodec

import (
	"fmt"

	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"

	"github.com/kubetyped/informers/internal/share"
	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// protoMessage is a generated API type.
type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// messageTypes returns the struct types of every protobuf message type
// registered in client-go's scheme, and of PartialObjectMetadata and its
// list, once each, by name.
func messageTypes() []reflect.Type {
	seen := map[reflect.Type]bool{}
	for _, t := range scheme.Scheme.AllKnownTypes() {
		if reflect.PointerTo(t).Implements(reflect.TypeFor[protoMessage]()) {
			seen[t] = true
		}
	}
	seen[reflect.TypeFor[metav1.PartialObjectMetadata]()] = true
	seen[reflect.TypeFor[metav1.PartialObjectMetadataList]()] = true
	types := make([]reflect.Type, 0, len(seen))
	for t := range seen {
		types = append(types, t)
	}
	slices.SortFunc(types, func(a, b reflect.Type) int { return strings.Compare(typeName(a), typeName(b)) })
	return types
}

// typeName names t with its package path, such as k8s.io/api/core/v1.Pod.
func typeName(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

// newFiller returns a randfill.Filler of random objects for the
// differential tests: times, quantities and raw bytes, which randfill
// cannot fill on its own, are filled here.
func newFiller(seed uint64) *randfill.Filler {
	return randfill.NewWithSeed(int64(seed)).NilChance(0.2).NumElements(0, 3).MaxDepth(7).Funcs(
		func(t *metav1.Time, c randfill.Continue) {
			if c.Intn(5) > 0 {
				*t = metav1.Unix(c.Int63n(1<<34)-1<<30, c.Int63n(1e9))
			}
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			if c.Intn(5) > 0 {
				*t = metav1.NewMicroTime(time.Unix(c.Int63n(1<<34)-1<<30, c.Int63n(1e9)))
			}
		},
		func(q *resource.Quantity, c randfill.Continue) {
			forms := []string{"%d", "%dm", "%dMi", "%dGi", "%de3", "%dk", "0.%d", "%dn"}
			*q = resource.MustParse(fmt.Sprintf(forms[c.Intn(len(forms))], c.Int63n(1<<40)))
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			if c.Intn(3) > 0 {
				c.Fill(&r.Raw)
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			var raw []byte
			c.Fill(&raw)
			f.SetRawBytes(raw)
		},
	)
}

// objectsPerType is how many random objects of each type the differential
// test decodes.
const objectsPerType = 50

// TestDecoderMatchesGenerated decodes random objects of every type of
// client-go's scheme, encoded by their generated Marshal, and compares
// them with what their generated Unmarshal decodes from the same bytes:
// with sharing off, and on, where every encoding is decoded again after
// the others, so that the second time is shared.
func TestDecoderMatchesGenerated(t *testing.T) {
	for _, typ := range messageTypes() {
		t.Run(typeName(typ), func(t *testing.T) {
			t.Parallel()
			plan := planFor(typ)
			require.NotEqual(t, delegateCodec, plan.codec, "every type of the scheme has a plan")
			encoded := make([][]byte, objectsPerType)
			want := make([]any, objectsPerType)
			for i := range encoded {
				in := reflect.New(typ).Interface().(protoMessage)
				newFiller(uint64(i)).Fill(in)
				data, err := in.Marshal()
				require.NoError(t, err)
				out := reflect.New(typ).Interface().(protoMessage)
				require.NoError(t, out.Unmarshal(data))
				encoded[i], want[i] = data, out
			}
			for _, sharing := range []bool{false, true} {
				d := newDecoder(sharing)
				var root *share.Place
				if sharing {
					root = &share.Place{}
				}
				order := append(append(slices.Collect(seq(objectsPerType)), slices.Collect(seq(objectsPerType))...), 0, 1, 2)
				for _, i := range order {
					got := reflect.New(typ)
					require.NoError(t, d.message(plan, root, got.UnsafePointer(), encoded[i]), "object %d", i)
					require.True(t, reflect.DeepEqual(want[i], got.Interface()), "object %d, share=%v:\n%s", i, sharing, valuediff.First(want[i], got.Interface()))
					require.True(t, apiequality.Semantic.DeepEqual(want[i], got.Interface()), "object %d, share=%v", i, sharing)
				}
			}
		})
	}
}

func seq(n int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}
