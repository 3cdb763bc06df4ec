//go:build !race

package upstreamtest

// raceEnabled is whether this test runs with the race detector: the suite
// then runs with it too.
const raceEnabled = false
