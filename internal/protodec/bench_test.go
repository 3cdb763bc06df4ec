package protodec

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// BenchmarkDecodePod decodes realistic pods (1 000 of 100 deployments on
// 500 nodes) one by one: with the generated Unmarshal, and with the
// decoder, sharing or not.
func BenchmarkDecodePod(b *testing.B) {
	for _, managedFields := range []bool{false, true} {
		pods := bf.NewPodList(1000, bf.PodOptions{Namespaces: 10, Nodes: 500, ManagedFields: managedFields, Seed: 2})
		encoded := make([][]byte, pods.Len())
		for i := range encoded {
			data, err := pods.Pod(i).Marshal()
			require.NoError(b, err)
			encoded[i] = data
		}
		for _, impl := range []string{"generated", "decoder", "decoder-share"} {
			b.Run(fmt.Sprintf("managedFields=%v/impl=%s", managedFields, impl), func(b *testing.B) {
				dec, err := New(reflect.TypeFor[*corev1.Pod](), Options{Share: impl == "decoder-share"})
				require.NoError(b, err)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					data := encoded[i%len(encoded)]
					pod := &corev1.Pod{}
					if impl == "generated" {
						err = pod.Unmarshal(data)
					} else {
						err = dec.Decode(reflect.ValueOf(pod).UnsafePointer(), data)
					}
					if err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}
