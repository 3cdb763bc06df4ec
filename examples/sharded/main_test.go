package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubetyped/informers/examples/internal/exampletest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Three replicas each print about a third of the objects; after one is
// killed, the two others print all of them between them.
func TestReplicasShareAndTakeOver(t *testing.T) {
	env := testenv.New(t, testenv.Options{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
	const objects = 60
	p := exampletest.Run(t, run, env.Config(), options{Replicas: 3, Objects: objects, LeaseDuration: 2 * time.Second, KillAfter: 8 * time.Second})
	p.Eventually(func() bool { return sharedBy(p.Output(), 3) == objects }, "three replicas own all %d objects", objects)
	p.EventuallyPrints("killing replica-2")
	p.Eventually(func() bool {
		out := p.Output()
		return sharedBy(out[strings.Index(out, "killing replica-2"):], 2) == objects
	}, "after the kill, two replicas own all %d objects", objects)
	if !strings.Contains(p.Output(), "shard filter: server") {
		t.Error("the server filters with the gate on")
	}
}

var owns = regexp.MustCompile(`(replica-\d) owns (\d+) config maps \(members \[([^\]]*)\]`)

// sharedBy returns how many objects the replicas own between them, by
// the last line each printed while seeing n members; -1 unless n
// replicas printed such a line.
func sharedBy(out string, n int) int {
	last := map[string]int{}
	for _, m := range owns.FindAllStringSubmatch(out, -1) {
		if len(strings.Fields(m[3])) == n {
			last[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	if len(last) != n {
		return -1
	}
	total := 0
	for _, c := range last {
		total += c
	}
	return total
}
