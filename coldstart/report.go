package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// report is what a run measured, with what it ran on.
type report struct {
	Resource string `json:"resource"`
	Server   string `json:"server"`
	// Expected is how many objects the server said it had before the
	// run; every synced implementation reports how many it cached.
	Expected int `json:"expected_objects"`
	// Fixture says what -local created; "" on a user's cluster.
	Fixture     string `json:"fixture,omitempty"`
	MemoryLimit int64  `json:"memory_limit_bytes,omitempty"`
	LimitMethod string `json:"limit_method,omitempty"`
	// LimitReason says why the limit is not enforced by a cgroup.
	LimitReason string        `json:"limit_reason,omitempty"`
	Machine     string        `json:"machine"`
	Results     []measurement `json:"results"`
}

// machine describes where the harness runs.
func machine() string {
	return fmt.Sprintf("%s %s/%s, %d CPUs", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
}

// writeJSON writes the report as indented JSON.
func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeTable writes the report as an aligned table, with a header saying
// what ran where, and the errors of the implementations that did not sync
// below it.
func (r *report) writeTable(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "resource  %s, about %d objects\n", r.Resource, r.Expected)
	if r.Fixture != "" {
		fmt.Fprintf(&b, "fixture   %s\n", r.Fixture)
	}
	fmt.Fprintf(&b, "server    %s\n", r.Server)
	fmt.Fprintf(&b, "client    %s\n", r.Machine)
	if r.MemoryLimit > 0 {
		fmt.Fprintf(&b, "limit     %s, enforced by %s\n", formatSize(r.MemoryLimit), r.LimitMethod)
		if r.LimitReason != "" {
			fmt.Fprintf(&b, "          (no cgroup: %s)\n", r.LimitReason)
		}
	}
	b.WriteString("\n")
	rows := [][]string{{"implementation", "outcome", "objects", "sync", "CPU", "peak RSS", "RSS after sync", "heap after sync", "heap/object"}}
	var notes []string
	for _, m := range r.Results {
		if m.Outcome != synced {
			notes = append(notes, fmt.Sprintf("%s: %s", m.Implementation, m.Error))
		}
		rows = append(rows, []string{m.Implementation, string(m.Outcome),
			orDash(m.Objects > 0, fmt.Sprint(m.Objects)),
			orDash(m.Outcome == synced, formatDuration(m.Sync)),
			formatDuration(m.CPU),
			orDash(m.PeakRSS > 0, formatSize(int64(m.PeakRSS))),
			orDash(m.RSSAfterSync > 0, formatSize(int64(m.RSSAfterSync))),
			orDash(m.HeapAfterSync > 0, formatSize(int64(m.HeapAfterSync))),
			orDash(m.BytesPerObject > 0, fmt.Sprintf("%.0f B", m.BytesPerObject))})
	}
	writeAligned(&b, rows)
	for _, n := range notes {
		fmt.Fprintf(&b, "\n%s", n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeAligned writes rows as columns two spaces apart, the first
// aligned left and the others, figures, right.
func writeAligned(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if i == 0 {
				line.WriteString(cell + pad)
			} else {
				line.WriteString("  " + pad + cell)
			}
		}
		fmt.Fprintln(w, line.String())
	}
}

func orDash(ok bool, s string) string {
	if !ok {
		return "-"
	}
	return s
}

// formatDuration formats d to the millisecond, in seconds above one.
func formatDuration(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return d.Round(time.Millisecond).String()
}

// SVG chart layout, in pixels.
const (
	svgGroupWidth = 170 // one implementation's pair of bars and gap
	svgBarWidth   = 56
	svgPlotHeight = 300
	svgLeft       = 80 // room for the axis labels
	svgTop        = 70 // room for the title and legend
	svgBottom     = 60 // room for the implementations' names
	svgRight      = 30
	colorPeak     = "#4e79a7"
	colorHeap     = "#f28e2b"
	colorLimit    = "#d62728"
)

// svg returns a bar chart of the peak RSS and the heap after sync of
// every implementation, with the memory limit as a line.
func (r *report) svg() []byte {
	width := svgLeft + svgGroupWidth*max(len(r.Results), 1) + svgRight
	height := svgTop + svgPlotHeight + svgBottom
	top := float64(r.MemoryLimit)
	for _, m := range r.Results {
		top = max(top, float64(m.PeakRSS), float64(m.HeapAfterSync))
	}
	step := tickStep(top)
	top = math.Max(step, math.Ceil(top/step)*step)
	y := func(v float64) float64 { return svgTop + svgPlotHeight - v/top*svgPlotHeight }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">Cold start: %s, %d objects</text>`+"\n", svgLeft, esc(r.Resource), r.Expected)
	legend := func(x int, color, label string) {
		fmt.Fprintf(&b, `<rect x="%d" y="36" width="12" height="12" fill="%s"/><text x="%d" y="46">%s</text>`+"\n", x, color, x+16, esc(label))
	}
	// A run that did not sync draws its peak hatched, outlined in the
	// limit's colour: the peak at which it ended, not that of a cache.
	fmt.Fprintf(&b, `<defs><pattern id="ended" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">`+
		`<rect width="6" height="6" fill="white"/><line x1="0" y1="0" x2="0" y2="6" stroke="%s" stroke-width="3"/></pattern></defs>`+"\n", colorPeak)
	legend(svgLeft, colorPeak, "peak RSS")
	legend(svgLeft+100, colorHeap, "Go heap after sync")
	if slices.ContainsFunc(r.Results, func(m measurement) bool { return m.Outcome != synced }) {
		fmt.Fprintf(&b, `<rect x="%d" y="36" width="12" height="12" fill="url(#ended)" stroke="%s"/><text x="%d" y="46">%s</text>`+"\n",
			svgLeft+250, colorLimit, svgLeft+266, esc("peak RSS of a run killed or failed before it synced"))
	}
	for v := 0.0; v <= top+step/2; v += step {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", svgLeft, width-svgRight, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", svgLeft-6, y(v)+4, esc(tickLabel(v)))
	}
	for i, m := range r.Results {
		x := float64(svgLeft + svgGroupWidth*i + (svgGroupWidth-2*svgBarWidth)/2)
		bar := func(x float64, v uint64, fill string) {
			if v == 0 {
				return
			}
			stroke := ""
			if m.Outcome != synced {
				stroke = fmt.Sprintf(` stroke="%s" stroke-width="1.5"`, colorLimit)
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"%s/>`+"\n", x, y(float64(v)), svgBarWidth, svgTop+svgPlotHeight-y(float64(v)), fill, stroke)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%s</text>`+"\n", x+svgBarWidth/2, y(float64(v))-4, esc(formatSize(int64(v))))
		}
		center := x + svgBarWidth
		under, color := "synced in "+formatDuration(m.Sync), "black"
		if m.Outcome == synced {
			bar(x, m.PeakRSS, colorPeak)
		} else {
			bar(x, m.PeakRSS, "url(#ended)")
			under, color = "✗ "+string(m.Outcome)+", not synced", colorLimit
		}
		bar(x+svgBarWidth, m.HeapAfterSync, colorHeap)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", center, svgTop+svgPlotHeight+20, esc(m.Implementation))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="%s">%s</text>`+"\n", center, svgTop+svgPlotHeight+38, color, esc(under))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", svgLeft, width-svgRight, svgTop+svgPlotHeight, svgTop+svgPlotHeight)
	if r.MemoryLimit > 0 {
		ly := y(float64(r.MemoryLimit))
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`+"\n", svgLeft, width-svgRight, ly, ly, colorLimit)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="%s">limit %s</text>`+"\n", width-svgRight, ly-5, colorLimit, esc(formatSize(r.MemoryLimit)))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// tickStep returns the smallest power of two, from 1 KiB, that cuts
// 0..top into at most six steps: ticks fall on round binary sizes.
func tickStep(top float64) float64 {
	step := float64(1 << 10)
	for top/step > 6 {
		step *= 2
	}
	return step
}

// tickLabel formats a tick's size, without needless decimals.
func tickLabel(v float64) string {
	if v == 0 {
		return "0"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	exp := 0
	for v >= 1024 && exp < len(units)-1 {
		v /= 1024
		exp++
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + units[exp]
}

// esc escapes s for XML text and attributes.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
