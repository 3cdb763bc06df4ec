package upstreamtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// testResult is a plain test's outcome, from go test -json.
type testResult struct {
	action string // pass, fail or skip
	output strings.Builder
}

// parseTestEvents reads go test -json's events: the outcome of each
// top-level test, and all output as text.
func parseTestEvents(data []byte) (map[string]*testResult, string) {
	tests := map[string]*testResult{}
	var all strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var ev struct {
			Action, Test, Output string
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			all.Write(sc.Bytes()) // not an event: a build error, say
			all.WriteByte('\n')
			continue
		}
		all.WriteString(ev.Output)
		if ev.Test == "" || strings.Contains(ev.Test, "/") {
			continue
		}
		r := tests[ev.Test]
		if r == nil {
			r = &testResult{}
			tests[ev.Test] = r
		}
		switch ev.Action {
		case "output":
			r.output.WriteString(ev.Output)
		case "pass", "fail", "skip":
			r.action = ev.Action
		}
	}
	return tests, all.String()
}

// readReport reads the suite's Ginkgo JSON report.
func readReport(path string) ([]types.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("ginkgo report %s: %w", path, err)
	}
	return reports, nil
}

// outcome is the judgement of one run of the suite.
type outcome struct {
	suiteTotal                            int // specs in the suite, by Ginkgo's own count
	specs, specsPassed, specsFailed       int
	specsPinned                           int // failed as pinnedSpecs says they do
	testsPassed, testsFailed, testsPinned int
	failedNames                           []string
	problems                              []string // each fails the run
}

// judge checks a run against the pins: every spec and test passes but
// the pinned ones, which fail; the suite ran whole, without a focus, a
// skip or a label filter.
func judge(s suite, reports []types.Report, tests map[string]*testResult, specPins, testPins map[string]string) outcome {
	var o outcome
	problem := func(format string, args ...any) { o.problems = append(o.problems, fmt.Sprintf(format, args...)) }
	if len(reports) != 1 {
		problem("the ginkgo report holds %d suites, want 1", len(reports))
		return o
	}
	rep := reports[0]
	c := rep.SuiteConfig
	if len(c.FocusStrings)+len(c.SkipStrings)+len(c.FocusFiles)+len(c.SkipFiles) > 0 || c.LabelFilter != "" || c.SemVerFilter != "" {
		problem("the suite ran filtered (focus %q, skip %q, focus files %q, skip files %q, labels %q, semver %q): the run must run every spec",
			c.FocusStrings, c.SkipStrings, c.FocusFiles, c.SkipFiles, c.LabelFilter, c.SemVerFilter)
	}
	if rep.SuiteHasProgrammaticFocus {
		problem("the suite has a programmatic focus (FIt, FDescribe…)")
	}
	o.suiteTotal = rep.PreRunStats.TotalSpecs
	if rep.PreRunStats.SpecsThatWillRun != o.suiteTotal {
		problem("ginkgo was to run %d of the suite's %d specs", rep.PreRunStats.SpecsThatWillRun, o.suiteTotal)
	}
	seen := map[string]bool{}
	for _, sr := range rep.SpecReports {
		name := sr.FullText()
		if sr.LeafNodeType != types.NodeTypeIt {
			// BeforeSuite, AfterSuite and the like: not specs, but a
			// failure there is one of the run's.
			if sr.State.Is(types.SpecStateFailureStates) {
				problem("%s %s: %s", sr.LeafNodeType, sr.State, failure(sr))
				o.failedNames = append(o.failedNames, sr.LeafNodeType.String())
			}
			continue
		}
		o.specs++
		seen[name] = true
		reason, pinned := specPins[name]
		switch {
		case sr.State == types.SpecStatePassed:
			o.specsPassed++
			if pinned {
				problem("pinned spec now passes; unpin it (it was pinned because %s): %q", reason, name)
			}
		case sr.State.Is(types.SpecStateFailureStates):
			o.specsFailed++
			o.failedNames = append(o.failedNames, fmt.Sprintf("%q", name))
			if pinned {
				o.specsPinned++
			} else {
				problem("spec %s: %q: %s", sr.State, name, failure(sr))
			}
		default: // skipped or pending
			problem("spec %s: %q: the run must run every spec", sr.State, name)
		}
	}
	if o.specs != o.suiteTotal {
		problem("%d specs reported, the suite has %d", o.specs, o.suiteTotal)
	}
	for name := range specPins {
		if !seen[name] {
			problem("pinned spec %q is not in the suite: unpin it", name)
		}
	}

	for _, name := range s.tests {
		r := tests[name]
		reason, pinned := testPins[name]
		switch {
		case r == nil || r.action == "":
			problem("test %s did not run", name)
		case r.action == "pass":
			o.testsPassed++
			if pinned {
				problem("pinned test %s now passes; unpin it (it was pinned because %s)", name, reason)
			}
		case r.action == "fail":
			o.testsFailed++
			o.failedNames = append(o.failedNames, name)
			if pinned {
				o.testsPinned++
			} else {
				problem("test %s failed:\n%s", name, r.output.String())
			}
		default:
			problem("test %s: %s: the run must run every test\n%s", name, r.action, r.output.String())
		}
	}
	for name := range testPins {
		if !slices.Contains(s.tests, name) {
			problem("pinned test %s is not in the suite: unpin it", name)
		}
	}
	for _, name := range s.runners {
		if r := tests[name]; r == nil || r.action == "" {
			problem("test %s, which runs the specs, did not finish:\n%s", name, tail(r.outputString(), 8000))
		}
	}
	slices.Sort(o.failedNames)
	return o
}

func (r *testResult) outputString() string {
	if r == nil {
		return ""
	}
	return r.output.String()
}

// failure describes a failed spec's failure: where and why, in short.
func failure(sr types.SpecReport) string {
	f := sr.Failure
	msg := f.Message
	if len(msg) > 600 {
		msg = msg[:600] + "…"
	}
	return fmt.Sprintf("%s: %s", f.Location, msg)
}
