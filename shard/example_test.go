package shard_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers/shard"
)

// Replica 1 of 4 takes the second quarter of the hash space; the server
// selects it with the shard's selector, and Contains places an object
// as the server does.
func ExampleOf() {
	s := shard.Of(shard.ByUID, 1, 4)
	fmt.Println(s.Ranges)
	fmt.Println(s.Selector())
	obj := &metav1.ObjectMeta{UID: "0a6c4e5e-1f0b-4c1e-9c53-3f1c1c7a1b2d"}
	fmt.Printf("%#x %v\n", shard.Hash(shard.ByUID, obj), s.Contains(obj))
	// Output:
	// [[0x4000000000000000, 0x8000000000000000)]
	// shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')
	// 0x77e6b06248058bf0 true
}

func ExampleSplit() {
	for i, r := range shard.Split(3) {
		fmt.Println(i, r)
	}
	// Output:
	// 0 [0x0000000000000000, 0x5555555555555555)
	// 1 [0x5555555555555555, 0xaaaaaaaaaaaaaaaa)
	// 2 [0xaaaaaaaaaaaaaaaa, 0x10000000000000000)
}

// A fake server reads the selector of a request back.
func ExampleParse() {
	s, err := shard.Parse("shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Field, s.Ranges)
	fmt.Println(s.Contains(&metav1.ObjectMeta{Namespace: "default"}))
	// Output:
	// object.metadata.namespace [[0x8000000000000000, 0x10000000000000000)]
	// true
}
