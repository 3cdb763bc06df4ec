// Command benchchart draws the key ratios of a `go test -bench` run of the
// side-by-side benchmarks (bench_test.go) as an SVG bar chart: for each key
// scenario, the median of ours divided by the median of client-go's.
//
//	go run ./internal/cmd/benchchart -in bench.txt -out benchmarks.svg
//
// A bar left of 1 means ours measured less than client-go; its colour says
// whether that is better (green) or worse (red) for the metric. It prints
// the table of ratios on standard output as well.
package main

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// row is one bar: a metric of one benchmark, ours against a baseline.
type row struct {
	Label string
	// Group is the benchmark name up to, not including, "/impl=".
	Group string
	Unit  string
	// Ours and Base are the impl= values compared; Base defaults to
	// clientgo and Ours to informers.
	Ours, Base string
	// HigherIsBetter is set for rates such as writes/s.
	HigherIsBetter bool
}

// memoryRows are the memory scenarios, on objects decoded from the wire,
// in chart order: the end of every full chart, and a chart of their own
// with -rows memory.
var memoryRows = []row{
	{Label: "… both stripping managedFields", Group: "BenchmarkInitialSync/pods=100000/managedFields=true/fixture=decoded", Unit: "retained-B/obj", Ours: "informers-strip-intern", Base: "clientgo-strip"},
	{Label: "InitialSync 100k decoded: time", Group: "BenchmarkInitialSync/pods=100000/managedFields=false/fixture=decoded", Unit: "ns/op"},
	{Label: "SyncScale 1M small pods: time", Group: "BenchmarkSyncScale/pods=1000000", Unit: "ns/op"},
	{Label: "SyncScale 1M small pods: retained", Group: "BenchmarkSyncScale/pods=1000000", Unit: "retained-B/obj"},
	{Label: "EndToEnd 10k pods: time (client-go: watch-list)", Group: "BenchmarkEndToEnd/pods=10000", Unit: "ns/op", Base: "clientgo-watchlist"},
	{Label: "EndToEnd 10k pods: bytes allocated (client-go: watch-list)", Group: "BenchmarkEndToEnd/pods=10000", Unit: "B/op", Base: "clientgo-watchlist"},
	{Label: "EndToEnd 100k pods: time (client-go: watch-list)", Group: "BenchmarkEndToEnd/pods=100000", Unit: "ns/op", Base: "clientgo-watchlist"},
	{Label: "EndToEnd 100k pods: bytes allocated (client-go: watch-list)", Group: "BenchmarkEndToEnd/pods=100000", Unit: "B/op", Base: "clientgo-watchlist"},
	{Label: "EndToEnd 10k config maps: time (client-go: watch-list)", Group: "BenchmarkEndToEnd/configmaps=10000", Unit: "ns/op", Base: "clientgo-watchlist"},
	{Label: "EndToEnd 10k config maps: bytes allocated (client-go: watch-list)", Group: "BenchmarkEndToEnd/configmaps=10000", Unit: "B/op", Base: "clientgo-watchlist"},
}

// rows are the key scenarios, in chart order.
var rows = []row{
	{Label: "Update, 1 handler: time per event", Group: "BenchmarkUpdate/pods=10000/handlers=1", Unit: "ns/op"},
	{Label: "Update, 1 handler: bytes allocated per event", Group: "BenchmarkUpdate/pods=10000/handlers=1", Unit: "B/op"},
	{Label: "Update, 1 handler: time per event, ours ÷ floor", Group: "BenchmarkUpdate/pods=10000/handlers=1", Unit: "ns/op", Base: "floor"},
	{Label: "Update, 8 handlers: time per event", Group: "BenchmarkUpdate/pods=10000/handlers=8", Unit: "ns/op"},
	{Label: "ReadWrite 10k, 10 readers: writes/s", Group: "BenchmarkReadWrite/pods=10000/readers=10", Unit: "writes/s", HigherIsBetter: true},
	{Label: "ReadWrite 10k, 10 readers: reads/s", Group: "BenchmarkReadWrite/pods=10000/readers=10", Unit: "reads/s", HigherIsBetter: true},
	{Label: "ReadWrite 10k, 10 readers: writes/s (iter)", Group: "BenchmarkReadWrite/pods=10000/readers=10", Unit: "writes/s", Ours: "informers-iter", HigherIsBetter: true},
	{Label: "ReadWrite 100k, 1 reader: writes/s", Group: "BenchmarkReadWrite/pods=100000/readers=1", Unit: "writes/s", HigherIsBetter: true},
	{Label: "InitialSync 100k: time", Group: "BenchmarkInitialSync/pods=100000/managedFields=false/fixture=copied", Unit: "ns/op"},
	{Label: "InitialSync 100k: time, ours ÷ floor", Group: "BenchmarkInitialSync/pods=100000/managedFields=false/fixture=copied", Unit: "ns/op", Base: "floor"},
	{Label: "InitialSync 100k: peak heap", Group: "BenchmarkInitialSync/pods=100000/managedFields=false/fixture=copied", Unit: "peak-MB"},
	{Label: "Query: Get", Group: "BenchmarkQuery/pods=100000/op=get", Unit: "ns/op"},
	{Label: "Query: List namespace (2 000 pods)", Group: "BenchmarkQuery/pods=100000/op=list-namespace", Unit: "ns/op"},
	{Label: "Query: node index (200 pods)", Group: "BenchmarkQuery/pods=100000/op=index-node", Unit: "ns/op"},
	{Label: "Query: label selector over 100k", Group: "BenchmarkQuery/pods=100000/op=select-labels", Unit: "ns/op"},
	{Label: "Relist 100k unchanged: time", Group: "BenchmarkRelist/pods=100000/changed=0", Unit: "ns/op"},
	{Label: "Relist 100k unchanged: notifications", Group: "BenchmarkRelist/pods=100000/changed=0", Unit: "notifications/op"},
	{Label: "Relist 100k unchanged: peak heap", Group: "BenchmarkRelist/pods=100000/changed=0", Unit: "peak-MB"},
	{Label: "SlowHandler: fast handler p99 latency", Group: "BenchmarkSlowHandler/pods=1000/slow=1ms", Unit: "p99-ns"},
	{Label: "SlowHandler: backlog bytes per event", Group: "BenchmarkSlowHandler/pods=1000/slow=1ms", Unit: "backlog-B/event"},
}

func main() {
	in := flag.String("in", "bench.txt", "go test -bench output to read")
	out := flag.String("out", "benchmarks.svg", "SVG file to write")
	set := flag.String("rows", "all", "the bars to draw: all, or memory")
	flag.Parse()
	chart := append(slices.Clone(rows), memoryRows...)
	if *set == "memory" {
		chart = memoryRows
	}
	f, err := os.Open(*in)
	if err != nil {
		log.Fatal(err)
	}
	results, err := parse(f)
	f.Close()
	if err != nil {
		log.Fatal(err)
	}
	bars := compute(results, chart)
	if len(bars) == 0 {
		log.Fatalf("benchchart: none of the key benchmarks are in %s", *in)
	}
	for _, b := range bars {
		fmt.Printf("%-50s %-16s %12s %12s  %s\n", b.Label, b.Unit, format(b.OursValue), format(b.BaseValue), b.Text)
	}
	var buf bytes.Buffer
	if err := draw(&buf, bars); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

// results maps a benchmark name (without the -GOMAXPROCS suffix) and a
// unit to the values of every run.
type results map[string]map[string][]float64

// parse reads benchmark lines: name, iterations, then value-unit pairs.
func parse(r io.Reader) (results, error) {
	res := results{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := trimProcs(fields[0])
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			if res[name] == nil {
				res[name] = map[string][]float64{}
			}
			res[name][fields[i+1]] = append(res[name][fields[i+1]], v)
		}
	}
	return res, sc.Err()
}

// trimProcs drops the -N that go test appends for GOMAXPROCS.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// bar is a row with its figures.
type bar struct {
	row
	OursValue, BaseValue float64
	Ratio                float64 // ours / base
	Better               bool
	Text                 string // the ratio as shown
	Runs                 int
}

func compute(res results, rows []row) []bar {
	var bars []bar
	for _, r := range rows {
		if r.Ours == "" {
			r.Ours = "informers"
		}
		if r.Base == "" {
			r.Base = "clientgo"
		}
		ours := res[r.Group+"/impl="+r.Ours][r.Unit]
		base := res[r.Group+"/impl="+r.Base][r.Unit]
		if len(ours) == 0 || len(base) == 0 {
			continue
		}
		b := bar{row: r, OursValue: median(ours), BaseValue: median(base), Runs: min(len(ours), len(base))}
		switch {
		case b.BaseValue == 0 && b.OursValue == 0:
			b.Ratio, b.Text = 1, "both 0"
		case b.BaseValue <= 0:
			b.Ratio, b.Text = math.Inf(1), "client-go ≤ 0"
		default:
			b.Ratio = b.OursValue / b.BaseValue
			b.Text = ratioText(b.Ratio)
		}
		b.Better = b.Ratio < 1
		if r.HigherIsBetter {
			b.Better = b.Ratio > 1
		}
		if b.Ratio == 1 {
			b.Better = true
		}
		bars = append(bars, b)
	}
	return bars
}

func ratioText(r float64) string {
	switch {
	case r == 0:
		return "0×"
	case r >= 10:
		return fmt.Sprintf("%.0f×", r)
	case r >= 0.1:
		return fmt.Sprintf("%.2f×", r)
	default:
		return fmt.Sprintf("%.3f×", r)
	}
}

func format(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1e6:
		return fmt.Sprintf("%.3g", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// Layout, in pixels; the ratio axis is logarithmic from minRatio to
// maxRatio, and ratios beyond are drawn at the edge with their value.
const (
	width     = 1000
	labelW    = 390
	plotX     = labelW + 10
	plotW     = width - plotX - 90
	rowH      = 24
	top       = 78
	minRatio  = 0.001
	maxRatio  = 1000
	barHeight = 14
)

func xOf(ratio float64) float64 {
	r := math.Min(math.Max(ratio, minRatio), maxRatio)
	span := math.Log10(maxRatio) - math.Log10(minRatio)
	return plotX + (math.Log10(r)-math.Log10(minRatio))/span*plotW
}

type tick struct {
	X     float64
	Label string
}

type view struct {
	Width, Height   int
	PlotTop, PlotH  int
	Bars            []drawnBar
	Ticks           []tick
	OneX            float64
	LabelX, ValueX  int
	Runs            int
	TitleY, LegendY int
}

type drawnBar struct {
	bar
	Y, TextY      int
	X, W, EndX    float64
	Color, Anchor string
	TextColor     string
	Note          string
}

func draw(w io.Writer, bars []bar) error {
	v := view{Width: width, PlotTop: top - 8, LabelX: labelW, OneX: xOf(1), TitleY: 24, LegendY: 46}
	for e := math.Log10(minRatio); e <= math.Log10(maxRatio); e++ {
		r := math.Pow10(int(e))
		v.Ticks = append(v.Ticks, tick{X: xOf(r), Label: strconv.FormatFloat(r, 'f', -1, 64) + "×"})
	}
	for i, b := range bars {
		d := drawnBar{bar: b, Y: top + i*rowH}
		d.TextY = d.Y + barHeight - 3
		end := xOf(b.Ratio)
		d.X, d.W = math.Min(v.OneX, end), math.Abs(end-v.OneX)
		if d.W < 2 {
			d.W = 2
		}
		d.TextColor = "#222"
		d.Color = "#2e8540"
		if !b.Better {
			d.Color = "#c0392b"
		}
		if b.Base == "floor" { // above the floor is expected: neutral
			d.Color = "#7f8c8d"
		}
		d.Anchor, d.EndX = "start", math.Max(end, v.OneX)+4
		if end < v.OneX {
			d.Anchor, d.EndX = "end", end-4
		}
		if end < plotX+50 { // no room left of the bar: write inside it
			d.Anchor, d.EndX, d.TextColor = "start", end+4, "#fff"
		}
		d.Note = b.Text
		if b.HigherIsBetter {
			d.Note += " ↑"
		}
		v.Bars = append(v.Bars, d)
		v.Runs = max(v.Runs, b.Runs)
	}
	v.PlotH = len(bars)*rowH + 8
	v.Height = top + len(bars)*rowH + 40
	return chart.Execute(w, v)
}

var chart = template.Must(template.New("svg").Funcs(template.FuncMap{
	"x": func(s string) string {
		var b strings.Builder
		_ = xml.EscapeText(&b, []byte(s))
		return b.String()
	},
	"f":   func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"add": func(a, b int) int { return a + b },
}).Parse(`<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="{{.TitleY}}" font-size="16" font-weight="bold">kubetyped/informers vs client-go v0.37.2: ratios of medians of {{.Runs}} runs</text>
<text x="10" y="{{.LegendY}}" fill="#444">Bar = ours ÷ client-go (or ÷ floor where said), log scale, clamped to 0.001×–1000×. Green: ours better; red: ours worse; grey: ÷ floor. ↑: a rate, higher is better.</text>
{{range .Ticks}}<line x1="{{f .X}}" y1="{{$.PlotTop}}" x2="{{f .X}}" y2="{{add $.PlotTop $.PlotH}}" stroke="#ddd"/>
<text x="{{f .X}}" y="{{add $.PlotTop -4}}" text-anchor="middle" fill="#666">{{x .Label}}</text>
{{end}}<line x1="{{f .OneX}}" y1="{{.PlotTop}}" x2="{{f .OneX}}" y2="{{add .PlotTop .PlotH}}" stroke="#000"/>
{{range .Bars}}<text x="{{$.LabelX}}" y="{{.TextY}}" text-anchor="end">{{x .Label}}</text>
<rect x="{{f .X}}" y="{{.Y}}" width="{{f .W}}" height="14" fill="{{.Color}}"><title>{{x .Label}}: {{x .Unit}} ours {{.OursValue}} / client-go {{.BaseValue}}</title></rect>
<text x="{{f .EndX}}" y="{{.TextY}}" text-anchor="{{.Anchor}}" fill="{{.TextColor}}">{{x .Note}}</text>
{{end}}</svg>
`))
