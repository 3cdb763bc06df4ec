package informers

import "github.com/kubetyped/informers/internal/apiclient"

// Decoders shares the library's decoders, and the tables of strings and
// parts they share as they decode, between the factories whose
// FactoryOptions.Decoders point to it: objects that several factories
// cache alike, such as pods of several clusters with the same images,
// labels and owner kinds, then share their equal parts too. The factories
// of a fleet (package fleet) share one. Each decoder decodes one object at
// a time: factories that sync large lists at once take turns. It is safe
// for concurrent use; the zero value is ready.
type Decoders struct {
	shared apiclient.Decoders
}

// apiDecoders returns the decoders of d, or nil if d is nil.
func (d *Decoders) apiDecoders() *apiclient.Decoders {
	if d == nil {
		return nil
	}
	return &d.shared
}
