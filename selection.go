package informers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	op "k8s.io/apimachinery/pkg/selection"

	"github.com/kubetyped/informers/internal/apiclient"
)

// selection is what an informer caches of its resource: a namespace ("" for
// all) and label and field selectors, spelled canonically, so that it is
// both what a Factory tells informers apart by and what requests send.
type selection struct {
	namespace, labels, fields string
}

// selectors are a selection's selectors, parsed, for the client to
// evaluate.
type selectors struct {
	labels labels.Selector
	fields fields.Requirements
}

// newSelection parses the selectors and spells them canonically, so that
// equivalent spellings select one informer; it returns them parsed too.
func newSelection(namespace, labelSel, fieldSel string) (selection, selectors, error) {
	ls, err := labels.Parse(labelSel)
	if err != nil {
		return selection{}, selectors{}, fmt.Errorf("label selector %q: %w", labelSel, err)
	}
	fs, err := fields.ParseSelector(fieldSel)
	if err != nil {
		return selection{}, selectors{}, fmt.Errorf("field selector %q: %w", fieldSel, err)
	}
	reqs := fs.Requirements()
	slices.SortFunc(reqs, func(a, b fields.Requirement) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Operator, b.Operator), cmp.Compare(a.Value, b.Value))
	})
	terms := make([]string, len(reqs))
	for n, r := range reqs {
		terms[n] = fields.OneTermEqualSelector(r.Field, r.Value).String()
		if r.Operator == op.NotEquals {
			terms[n] = fields.OneTermNotEqualSelector(r.Field, r.Value).String()
		}
	}
	return selection{namespace: namespace, labels: ls.String(), fields: strings.Join(terms, ",")}, selectors{labels: ls, fields: reqs}, nil
}

// name names an informer of resource gvr with selection s, for metrics.
func (s selection) name(gvr schema.GroupVersionResource) string {
	parts := []string{apiclient.ResourceName(gvr)}
	for _, p := range [][2]string{{"namespace", s.namespace}, {"labels", s.labels}, {"fields", s.fields}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return strings.Join(parts, " ")
}

// narrow returns a tweak that sets the selectors of s on a request, then
// applies tweak, if any.
func (s selection) narrow(tweak func(*metav1.ListOptions)) func(*metav1.ListOptions) {
	if s.labels == "" && s.fields == "" {
		return tweak
	}
	return func(opts *metav1.ListOptions) {
		if s.labels != "" {
			opts.LabelSelector = s.labels
		}
		if s.fields != "" {
			opts.FieldSelector = s.fields
		}
		if tweak != nil {
			tweak(opts)
		}
	}
}
