package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/viewcheck"
)

// SchemaMode says whether the view of an informer is checked against the
// type it projects.
type SchemaMode uint8

const (
	// SchemaDefault checks a view against the scheme's Go type of its
	// resource if there is one, and otherwise against the schema the
	// server publishes; where no schema can be had, the informer runs
	// unchecked and says so.
	SchemaDefault SchemaMode = iota
	// SchemaRequire is SchemaDefault, but where no schema can be had the
	// informer's lists and watches fail, saying why.
	SchemaRequire
	// SchemaSkip checks nothing that decoding does not need: a view of a
	// built-in type is still planned from its Go type, and so checked.
	SchemaSkip
)

const (
	// schemaTimeout bounds each request for the server's OpenAPI.
	schemaTimeout = 10 * time.Second
	// recheckEvery bounds how often an object that does not decode makes
	// the check ask whether the schema changed.
	recheckEvery = time.Second
)

// schemaWait is how long the first check of a group version waits for
// the server to publish its schema: a CRD's is published a moment after
// the CRD is established. Tests shorten it.
var schemaWait = 5 * time.Second

// SchemaCheck is the check of an informer's view against the schema of
// its resource, shared by the list-watches of its namespaces: what it was
// checked against, what it found, and, for a schema that the server
// publishes, which version of it. It is safe for concurrent use.
type SchemaCheck struct {
	mode SchemaMode

	mu     sync.Mutex
	status string    // what the view was checked against, or why not
	err    error     // the mismatch found, or nil
	url    string    // the OpenAPI document checked against, with its hash
	said   string    // the last status logged
	lastAt time.Time // when an undecodable object last made a recheck
}

// NewSchemaCheck returns the check of an informer's view, in mode.
func NewSchemaCheck(mode SchemaMode) *SchemaCheck { return &SchemaCheck{mode: mode} }

// Status says what the view was checked against, what could not be
// checked, or why it was not: "" for an informer that is no view or a
// view not checked yet.
func (c *SchemaCheck) Status() string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Err returns the mismatch between the view and the schema last checked
// against, or nil.
func (c *SchemaCheck) Err() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// IsMismatch reports whether err says a view does not match its schema.
func IsMismatch(err error) bool {
	_, ok := errors.AsType[*viewcheck.Error](err)
	return ok
}

// set records the outcome of a check: status, and the mismatch err.
func (c *SchemaCheck) set(status string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status, c.err = status, err
}

// checkGo checks view against api, the scheme's Go type of its resource
// gvr, unless the mode skips it.
func (c *SchemaCheck) checkGo(view, api reflect.Type, gvr schema.GroupVersionResource) error {
	if c.mode == SchemaSkip {
		c.set("skipped (SchemaCheck)", nil)
		return nil
	}
	report, err := viewcheck.Check(view, viewcheck.FromGo(api))
	if err != nil {
		err = fmt.Errorf("%s: the scheme's %v: %w", ResourceName(gvr), api, err)
	}
	c.set(withUnchecked("checked against the scheme's "+api.String(), report), err)
	return err
}

// withUnchecked returns status with the fields that report says could
// not be checked.
func withUnchecked(status string, report viewcheck.Report) string {
	if len(report.Unchecked) == 0 {
		return status
	}
	return fmt.Sprintf("%s; unchecked, the schema says nothing of them: %s", status, strings.Join(report.Unchecked, ", "))
}

// CheckServer checks view against the schema the server publishes for
// kind gvk, unless it was checked against the same version of it: the
// document of gvk's group version is named by its hash, which the server
// changes with the schema. A mismatch is returned and kept (Err). Where
// no schema can be had, the view runs unchecked and the log says so once,
// or, in SchemaRequire mode, the error says why. When the server serves
// the resource but publishes no schema of it yet (a CRD just
// established) while it publishes others', the client's first check of
// its group version waits schemaWait for it.
func (c *SchemaCheck) CheckServer(ctx context.Context, a *OpenAPI, view reflect.Type, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource) error {
	if c.mode == SchemaSkip {
		c.set("skipped (SchemaCheck)", nil)
		return nil
	}
	if a == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, schemaTimeout+schemaWait)
	defer cancel()
	var url string
	var published bool // the server publishes the schemas of other group versions
	var doc *viewcheck.Document
	var root *viewcheck.Schema
	find := func(ctx context.Context) (bool, error) {
		var err error
		url, published, err = a.openAPIURL(ctx, gvk.GroupVersion())
		if err != nil || url == "" {
			return false, err
		}
		c.mu.Lock()
		same := url == c.url
		c.mu.Unlock()
		if same {
			return true, nil
		}
		if doc, err = a.openAPIDocument(ctx, gvk.GroupVersion(), url); err != nil {
			return false, err
		}
		var ok bool
		root, ok = doc.Kind(gvk)
		return ok, nil
	}
	found, err := find(ctx)
	if err == nil && !found && published && a.firstWait(gvk.GroupVersion()) {
		// The server answered: what fails while waiting (its rate limits,
		// the deadline) only ends the wait.
		err = wait.PollUntilContextTimeout(ctx, schemaWait/20, schemaWait, false, func(ctx context.Context) (bool, error) {
			ok, err := find(ctx)
			return ok && err == nil, nil
		})
		found = err == nil
		if wait.Interrupted(err) && ctx.Err() == nil {
			err = nil
		}
	}
	switch {
	case ctx.Err() != nil && err != nil:
		return err // the informer stops, or the check timed out: nothing learnt
	case err != nil:
		return c.unchecked(ctx, fmt.Errorf("unchecked: the server's OpenAPI v3 schema of %s cannot be read: %w", gvk.GroupVersion(), err), gvr)
	case !found:
		return c.unchecked(ctx, fmt.Errorf("unchecked: the server publishes no OpenAPI v3 schema of %v", gvk), gvr)
	case root == nil: // the same document as last checked
		return c.Err()
	}
	report, err := viewcheck.Check(view, root)
	if err != nil {
		err = fmt.Errorf("%s: the server's schema of %v: %w", ResourceName(gvr), gvk, err)
	}
	status := withUnchecked(fmt.Sprintf("checked against the server's schema of %v", gvk), report)
	c.mu.Lock()
	c.url, c.status, c.err = url, status, err
	c.mu.Unlock()
	c.log(ctx, status, 2)
	return err
}

// unchecked records that the view runs unchecked, for reason: an error
// in SchemaRequire mode, said once in the log otherwise.
//
// In SchemaRequire mode the error wraps reason, so that a 403 reads as
// one.
func (c *SchemaCheck) unchecked(ctx context.Context, reason error, gvr schema.GroupVersionResource) error {
	c.mu.Lock()
	c.url = ""
	c.mu.Unlock()
	if c.mode == SchemaRequire {
		err := fmt.Errorf("%s: the view must be checked (SchemaCheck), but is %w", ResourceName(gvr), reason)
		c.set(reason.Error(), err)
		return err
	}
	c.set(reason.Error(), nil)
	c.log(ctx, reason.Error(), 0)
	return nil
}

// log says status in ctx's log at verbosity v, unless it said it last.
func (c *SchemaCheck) log(ctx context.Context, status string, v int) {
	c.mu.Lock()
	said := c.said == status
	c.said = status
	c.mu.Unlock()
	if !said && status != "" {
		klog.FromContext(ctx).V(v).Info("View schema check", "status", status)
	}
}

// Recheck checks the view again if an object failed to decode into it,
// at most once every recheckEvery: its schema may have changed.
func (c *SchemaCheck) Recheck(ctx context.Context, a *OpenAPI, view reflect.Type, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource) error {
	c.mu.Lock()
	due := time.Since(c.lastAt) >= recheckEvery
	if due {
		c.lastAt = time.Now()
	}
	c.mu.Unlock()
	if !due {
		return nil
	}
	return c.CheckServer(ctx, a, view, gvk, gvr)
}

// OpenAPI reads the OpenAPI v3 documents a server publishes, through a
// client of its discovery, and keeps the last read of each group version.
// It is safe for concurrent use.
type OpenAPI struct {
	discovery rest.Interface

	mu   sync.Mutex
	docs map[schema.GroupVersion]openAPIDoc
	// waited holds the group versions whose schema a view's check waited
	// for the server to publish.
	waited map[schema.GroupVersion]bool
}

// NewOpenAPI returns the reader of the OpenAPI of the server that
// discovery, a client of its discovery paths, reaches.
func NewOpenAPI(discovery rest.Interface) *OpenAPI {
	return &OpenAPI{discovery: discovery, docs: map[schema.GroupVersion]openAPIDoc{}, waited: map[schema.GroupVersion]bool{}}
}

// openAPIURL returns the path, with its hash, of the server's OpenAPI v3
// document of gv, as the index at /openapi/v3 names it (the paths that
// client-go's discovery OpenAPIV3 reads), or "" if it names none, and
// whether it names any.
func (a *OpenAPI) openAPIURL(ctx context.Context, gv schema.GroupVersion) (url string, published bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, schemaTimeout)
	defer cancel()
	res := a.discovery.Get().AbsPath("/openapi/v3").SetHeader("Accept", "application/json").Do(ctx)
	raw, err := res.Raw()
	if err != nil {
		return "", false, res.Error()
	}
	var index struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return "", false, fmt.Errorf("decoding /openapi/v3: %w", err)
	}
	return index.Paths[strings.TrimPrefix(strings.Join(groupVersionPath(gv), "/"), "/")].URL, len(index.Paths) > 0, nil
}

// firstWait reports whether this is the first wait of the client for the
// server to publish the schema of gv: later checks of gv's views do not
// wait, a group version that publishes none (an aggregated API's) costing
// one wait per client.
func (a *OpenAPI) firstWait(gv schema.GroupVersion) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waited[gv] {
		return false
	}
	a.waited[gv] = true
	return true
}

// openAPIDocument returns the OpenAPI v3 document of gv at url, fetched
// once per url: the client keeps the last of each group version.
func (a *OpenAPI) openAPIDocument(ctx context.Context, gv schema.GroupVersion, url string) (*viewcheck.Document, error) {
	a.mu.Lock()
	cached := a.docs[gv]
	a.mu.Unlock()
	if cached.url == url && cached.doc != nil {
		return cached.doc, nil
	}
	ctx, cancel := context.WithTimeout(ctx, schemaTimeout)
	defer cancel()
	path, query, _ := strings.Cut(url, "?")
	req := a.discovery.Get().AbsPath(path).SetHeader("Accept", "application/json")
	for _, kv := range strings.Split(query, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			req = req.Param(k, v)
		}
	}
	res := req.Do(ctx)
	raw, err := res.Raw()
	if err != nil {
		return nil, res.Error()
	}
	doc, err := viewcheck.ParseOpenAPI(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	a.mu.Lock()
	a.docs[gv] = openAPIDoc{url: url, doc: doc}
	a.mu.Unlock()
	return doc, nil
}

// openAPIDoc is an OpenAPI v3 document of a group version and its path.
type openAPIDoc struct {
	url string
	doc *viewcheck.Document
}
