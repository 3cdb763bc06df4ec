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
// all), label and field selectors, and a label selector of namespaces,
// spelled canonically, so that it is both what a Factory tells informers
// apart by and what requests send.
type selection struct {
	namespace, labels, fields string
	namespaces                string // "" without Options.NamespaceSelector
}

// selectionFilter is a selection as the client evaluates it: what an
// informer can hold, as far as the client can tell. A tweak of the
// requests can narrow it further, unseen.
type selectionFilter struct {
	namespace      string // "" for all namespaces
	namespaceKnown bool
	// labels and fields are the informer's selectors, nil when a tweak may
	// change what is sent; fields keeps only the terms on metadata.name
	// and metadata.namespace, which the client can evaluate.
	labels labels.Selector
	fields fields.Selector
	// namespaces selects namespaces by label; nil without
	// Options.NamespaceSelector.
	namespaces labels.Selector
}

// newSelection parses the selectors and spells them canonically, so that
// equivalent spellings select one informer; it returns them as the client
// evaluates them too, with the namespace unknown and the selectors known
// (see selectionFilter.known). namespaceSel selects namespaces by label.
func newSelection(namespace, labelSel, fieldSel, namespaceSel string) (selection, selectionFilter, error) {
	ls, err := labels.Parse(labelSel)
	if err != nil {
		return selection{}, selectionFilter{}, fmt.Errorf("label selector %q: %w", labelSel, err)
	}
	fs, err := fields.ParseSelector(fieldSel)
	if err != nil {
		return selection{}, selectionFilter{}, fmt.Errorf("field selector %q: %w", fieldSel, err)
	}
	var namespaces labels.Selector
	if namespaceSel != "" {
		if namespaces, err = labels.Parse(namespaceSel); err != nil {
			return selection{}, selectionFilter{}, fmt.Errorf("namespace selector %q: %w", namespaceSel, err)
		}
	}
	reqs := fs.Requirements()
	slices.SortFunc(reqs, func(a, b fields.Requirement) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Operator, b.Operator), cmp.Compare(a.Value, b.Value))
	})
	terms := make([]string, len(reqs))
	var onMetadata []fields.Selector // the terms the client can evaluate
	for n, r := range reqs {
		term := fields.OneTermEqualSelector(r.Field, r.Value)
		if r.Operator == op.NotEquals {
			term = fields.OneTermNotEqualSelector(r.Field, r.Value)
		}
		terms[n] = term.String()
		if r.Field == "metadata.name" || r.Field == "metadata.namespace" {
			onMetadata = append(onMetadata, term)
		}
	}
	sel := selection{namespace: namespace, labels: ls.String(), fields: strings.Join(terms, ",")}
	filter := selectionFilter{namespace: namespace, labels: ls, fields: fields.AndSelectors(onMetadata...), namespaces: namespaces}
	if namespaces != nil {
		sel.namespaces = namespaces.String()
	}
	return sel, filter, nil
}

// known returns f with the namespace known if namespaceKnown says so, and
// its selectors dropped unless selectorsKnown says no tweak edits the
// requests.
func (f selectionFilter) known(namespaceKnown, selectorsKnown bool) selectionFilter {
	f.namespaceKnown = namespaceKnown
	if !selectorsKnown {
		f.labels, f.fields = nil, nil
	}
	return f
}

// name names an informer of resource gvr with selection s, for metrics.
func (s selection) name(gvr schema.GroupVersionResource) string {
	parts := []string{apiclient.ResourceName(gvr)}
	for _, p := range [][2]string{{"namespace", s.namespace}, {"labels", s.labels}, {"fields", s.fields}, {"namespaces", s.namespaces}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return strings.Join(parts, " ")
}

// apply sets the selectors of s on the options of a request.
func (s selection) apply(opts *metav1.ListOptions) {
	if s.labels != "" {
		opts.LabelSelector = s.labels
	}
	if s.fields != "" {
		opts.FieldSelector = s.fields
	}
}

// excludes reports whether f leaves obj out: its namespace, or its
// selectors. It reports false where it cannot tell.
func (f selectionFilter) excludes(obj metav1.Object) bool {
	switch {
	case f.namespaceKnown && f.namespace != "" && obj.GetNamespace() != f.namespace:
		return true
	case f.labels != nil && !f.labels.Matches(labels.Set(obj.GetLabels())):
		return true
	}
	return f.fields != nil && !f.fields.Matches(fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()})
}

// namespacesResource is the resource of Namespace objects, which a
// NamespaceSelector selects.
var namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
