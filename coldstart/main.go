// Command coldstart measures what a controller pays to start: it syncs one
// resource of a cluster into a client-side cache with each implementation
// in turn (client-go, controller-runtime, this library with and without
// watch-list), each in a fresh child process, and prints per
// implementation the sync time, the client's CPU, its peak RSS, its RSS
// and Go heap once synced, the heap per object, and whether it stayed
// under a memory limit. docs/scale.md says how to run it and how to read
// it.
//
// On your cluster (read-only: it lists and watches, nothing else):
//
//	KUBECONFIG=~/.kube/config go run github.com/kubetyped/informers/coldstart@latest \
//		-resource pods -memory-limit 1GiB -svg coldstart.svg
//
// Without a cluster, -local starts a local kube-apiserver and etcd and
// fills it with realistic objects first:
//
//	go run github.com/kubetyped/informers/coldstart@latest -local -objects 10000 -namespaces 1330
//
// The command imports two internal packages of the library,
// internal/testenv (the local control plane) and internal/benchfixtures
// (realistic pods). Go lets any package under
// github.com/kubetyped/informers/ import them, whatever module it is in,
// and that is acceptable here because this command is part of the
// library's release: it is tagged with it and requires it at the same
// version, so the internal API it uses cannot drift from what it was
// written against, and nothing imports a main package. The control plane
// is built and started only with -local.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	kubeconfig  string
	context     string
	resource    string
	as          string
	impls       string
	memoryLimit string
	timeout     time.Duration
	qps         float64
	burst       int
	json        bool
	svg         string

	local      bool
	objects    int
	namespaces int
	workers    int

	child string // hidden: run as the child measuring this implementation
}

// childFlag is the hidden flag that makes the command a child process
// measuring one implementation.
const childFlag = "child"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command with args, the table going to stdout and progress
// to stderr, and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "coldstart:", err)
		return 2
	}
	if o.child != "" {
		return runChild(ctx, o.child, stdout)
	}
	if err := runParent(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "coldstart:", err)
		return 1
	}
	return 0
}

// parseFlags parses args into options.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("coldstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to measure (default $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context (default the current one)")
	fs.StringVar(&o.resource, "resource", "pods", "resource to sync: "+strings.Join(typedResourceNames(), ", ")+
		", or any resource as group/version/resource (v1/secrets, apps/v1/deployments, argoproj.io/v1alpha1/applications)")
	fs.StringVar(&o.as, "as", "", "how to cache it: typed (Go types: the default for the resources -resource names), unstructured (the default for others) or metadata")
	fs.StringVar(&o.impls, "impl", strings.Join(implementationNames(), ","), "implementations to measure, comma-separated, in this order")
	fs.StringVar(&o.memoryLimit, "memory-limit", "", "memory limit each implementation must stay under, like a container's (512MiB, 4GiB); empty for none")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "how long one implementation may take to sync")
	fs.Float64Var(&o.qps, "qps", 50, "client-side requests per second of every implementation (-1: no limit)")
	fs.IntVar(&o.burst, "burst", 100, "client-side burst of requests of every implementation")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON instead of a table")
	fs.StringVar(&o.svg, "svg", "", "write a chart of peak RSS and heap per implementation to this SVG file")
	fs.BoolVar(&o.local, "local", false, "start a local kube-apiserver and etcd (built from Go modules on first use) and create the objects first, instead of using a kubeconfig")
	fs.IntVar(&o.objects, "objects", 10_000, "with -local: how many objects to create")
	fs.IntVar(&o.namespaces, "namespaces", 100, "with -local: how many namespaces to spread them over")
	fs.IntVar(&o.workers, "workers", 16, "with -local: how many objects to create at once")
	fs.StringVar(&o.child, childFlag, "", "")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: coldstart [flags]\n\n"+
			"Syncs one resource with each implementation, each in a fresh child process, and\n"+
			"prints what it cost: sync time, CPU, peak RSS, RSS and heap after sync.\n\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			if f.Name == childFlag {
				return
			}
			fmt.Fprintf(stderr, "  -%s\n    \t%s", f.Name, f.Usage)
			if f.DefValue != "" && f.DefValue != "false" {
				fmt.Fprintf(stderr, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(stderr)
		})
		fmt.Fprintf(stderr, "\nImplementations:\n")
		for _, im := range implementations {
			fmt.Fprintf(stderr, "  %-20s %s\n", im.name, im.about)
		}
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.child != "" {
		return o, nil
	}
	if o.local && (o.kubeconfig != "" || o.context != "") {
		return o, errors.New("-local starts its own cluster: drop -kubeconfig and -context")
	}
	if o.local && (o.objects < 1 || o.namespaces < 1 || o.workers < 1) {
		return o, fmt.Errorf("-objects (%d), -namespaces (%d) and -workers (%d) must be positive", o.objects, o.namespaces, o.workers)
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("-timeout %v must be positive", o.timeout)
	}
	if _, err := selectImplementations(o.impls); err != nil {
		return o, err
	}
	return o, nil
}

// selectImplementations returns the implementations named in list, a
// comma-separated list, in its order.
func selectImplementations(list string) ([]implementation, error) {
	var out []implementation
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(implementations, func(im implementation) bool { return im.name == name })
		if i < 0 {
			return nil, fmt.Errorf("-impl: unknown implementation %q; known: %s", name, strings.Join(implementationNames(), ", "))
		}
		out = append(out, implementations[i])
	}
	return out, nil
}

// runParent measures every selected implementation, one after the other,
// and reports.
func runParent(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("coldstart reads what it measures in /proc: run it on Linux (a VM, a pod, WSL), not %s", runtime.GOOS)
	}
	p := progress{w: stderr}
	impls, err := selectImplementations(o.impls)
	if err != nil {
		return err
	}
	res, err := parseResource(o.resource, o.as)
	if err != nil {
		return err
	}
	impls, skipped := applicable(impls, res)
	for _, name := range slices.Sorted(maps.Keys(skipped)) {
		p.printf("%s: not run: %s", name, skipped[name])
	}
	if len(impls) == 0 {
		return fmt.Errorf("-impl: no implementation measures %s", res)
	}
	var limit int64
	if o.memoryLimit != "" {
		if limit, err = parseSize(o.memoryLimit); err != nil {
			return fmt.Errorf("-memory-limit: %w", err)
		}
	}

	target, err := connect(ctx, o, res, p)
	if err != nil {
		return err
	}
	defer target.close()
	if err := target.describe(ctx, &res); err != nil {
		return err
	}
	p.printf("%s on %s: about %d objects", res, target.host, res.expected)

	enf := newEnforcer(limit)
	defer enf.close()
	if limit > 0 {
		p.printf("memory limit %s, enforced by %s", formatSize(limit), enf.method())
	}

	rep := report{
		Resource:    res.String(),
		Server:      target.host,
		Expected:    res.expected,
		MemoryLimit: limit,
		LimitMethod: enf.method(),
		LimitReason: enf.reason(),
		Machine:     machine(),
	}
	if o.local {
		rep.Fixture = fmt.Sprintf("%d objects over %d namespaces, created by -local", o.objects, o.namespaces)
	}
	for n, im := range impls {
		if err := target.settle(ctx); err != nil {
			return err
		}
		p.printf("[%d/%d] %s: syncing %s in a child process", n+1, len(impls), im.name, res.gvr.Resource)
		r, err := measureInChild(ctx, im, childConfig{
			Kubeconfig: target.kubeconfig,
			Context:    o.context,
			Resource:   res.spec(),
			QPS:        float32(o.qps),
			Burst:      o.burst,
			Limit:      limit,
			SelfLimit:  limit > 0 && enf.self(),
			Timeout:    o.timeout,
		}, enf, stderr)
		if err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		p.printf("[%d/%d] %s: %s", n+1, len(impls), im.name, r.summary())
		rep.Results = append(rep.Results, r)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}

	if o.json {
		err = rep.writeJSON(stdout)
	} else {
		err = rep.writeTable(stdout)
	}
	if err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	if o.svg != "" {
		if err := writeFile(o.svg, rep.svg()); err != nil {
			return fmt.Errorf("-svg: %w", err)
		}
		p.printf("wrote %s", o.svg)
	}
	return nil
}

// progress prints progress lines.
type progress struct{ w io.Writer }

func (p progress) printf(format string, args ...any) {
	fmt.Fprintf(p.w, "coldstart: "+format+"\n", args...)
}

// writeFile writes b to path.
func writeFile(path string, b []byte) error {
	return os.WriteFile(path, b, 0o644)
}
