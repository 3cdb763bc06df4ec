package decoded

import (
	"fmt"
	"strconv"

	"github.com/kubetyped/informers/internal/wording"
)

// KindError says that a list response holds a list of another kind than
// the one asked for: Got, such as PodList, where Want, such as
// PartialObjectMetadataList, was asked for.
type KindError struct {
	Got, Want string
}

func (e *KindError) Error() string {
	return fmt.Sprintf("the list is %s, want %q", wording.A(strconv.Quote(e.Got)), e.Want)
}
