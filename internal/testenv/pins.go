package testenv

import (
	"embed"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// EnvKubeVersion selects the kube-apiserver to build and run by its minor
// version, as in "1.34"; empty selects the newest pin (controlplane.mod).
// KubeVersions lists the versions pinned. INFORMERS_KUBE_APISERVER, when
// set, overrides the binary, not the selection: the two must agree.
const EnvKubeVersion = "INFORMERS_KUBE_VERSION"

// olderPins are the module files of the older kube-apiservers, one pair
// per minor version: controlplane-1.34.mod and controlplane-1.34.sum. They
// pin kube-apiserver alone; etcd comes from controlplane.mod for every
// version.
//
//go:embed controlplane-*.mod controlplane-*.sum
var olderPins embed.FS

// pin is the module file pair that pins one kube-apiserver.
type pin struct {
	name  string           // of the module file
	minor string           // "1.34"
	kube  *version.Version // of k8s.io/kubernetes, 1.34.4
	mod   []byte
	sum   []byte
}

// kubeRequire finds the version of k8s.io/kubernetes that a module file
// requires.
var kubeRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes (v1\.[0-9]+\.[0-9]+)\b`)

// newPin returns the pin of module file mod, with go.sum sum.
func newPin(name string, mod, sum []byte) (pin, error) {
	m := kubeRequire.FindSubmatch(mod)
	if m == nil {
		return pin{}, fmt.Errorf("testenv: %s requires no k8s.io/kubernetes", name)
	}
	v, err := version.ParseSemantic(string(m[1]))
	if err != nil {
		return pin{}, fmt.Errorf("testenv: %s: %w", name, err)
	}
	return pin{name: name, minor: fmt.Sprintf("%d.%d", v.Major(), v.Minor()), kube: v, mod: mod, sum: sum}, nil
}

// newestPin is controlplane.mod: the newest kube-apiserver, and etcd.
func newestPin() (pin, error) {
	return newPin("controlplane.mod", controlPlaneMod, controlPlaneSum)
}

// pins returns every pin, oldest first.
func pins() ([]pin, error) {
	newest, err := newestPin()
	if err != nil {
		return nil, err
	}
	mods, err := olderPins.ReadDir(".")
	if err != nil {
		return nil, fmt.Errorf("testenv: reading the embedded pins: %w", err)
	}
	var out []pin
	for _, e := range mods {
		name := e.Name()
		if path.Ext(name) != ".mod" {
			continue
		}
		mod, err := olderPins.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
		sumName := strings.TrimSuffix(name, ".mod") + ".sum"
		sum, err := olderPins.ReadFile(sumName)
		if err != nil {
			return nil, fmt.Errorf("testenv: %s has no %s: %w", name, sumName, err)
		}
		p, err := newPin(name, mod, sum)
		if err != nil {
			return nil, err
		}
		if want := "controlplane-" + p.minor + ".mod"; name != want {
			return nil, fmt.Errorf("testenv: %s pins kubernetes v%s; its name should be %s", name, p.kube, want)
		}
		out = append(out, p)
	}
	out = append(out, newest)
	slices.SortFunc(out, func(a, b pin) int {
		switch {
		case a.kube.LessThan(b.kube):
			return -1
		case b.kube.LessThan(a.kube):
			return 1
		}
		return 0
	})
	return out, nil
}

// KubeVersions returns the minor versions of kube-apiserver that can be
// built and run, oldest first, such as ["1.34" "1.35" "1.36" "1.37"]; the
// last is the default. EnvKubeVersion selects one.
func KubeVersions() ([]string, error) {
	ps, err := pins()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.minor
	}
	return out, nil
}

// selectedPin returns the pin that EnvKubeVersion selects.
func selectedPin() (pin, error) {
	want := strings.TrimPrefix(strings.TrimSpace(os.Getenv(EnvKubeVersion)), "v")
	if want == "" {
		return newestPin()
	}
	ps, err := pins()
	if err != nil {
		return pin{}, err
	}
	var known []string
	for _, p := range ps {
		if p.minor == want {
			return p, nil
		}
		known = append(known, p.minor)
	}
	return pin{}, fmt.Errorf("testenv: %s=%s: no kube-apiserver of that version is pinned (pinned: %s)",
		EnvKubeVersion, os.Getenv(EnvKubeVersion), strings.Join(known, ", "))
}
