package decoded

// EventFunc decodes data, the encoding of the object of one watch event,
// into a new object; bookmark says the event is a bookmark, whose object
// is not cached. The decoders make one for their format (protodec's and
// jsondec's EventDecoder), and internal/watchstream calls it for each
// event of a stream in that format.
type EventFunc[T any] func(data []byte, bookmark bool) (T, error)
