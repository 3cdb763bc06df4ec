package protodec

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The codecs of the types whose protobuf encoding is written by hand:
// metav1.Time, MicroTime, FieldsV1 and resource.Quantity.

// decodeTime decodes a Timestamp into t as metav1.Time (seconds only) or
// metav1.MicroTime (microseconds) does.
func decodeTime(t *time.Time, b []byte, micro bool) error {
	if len(b) == 0 {
		*t = time.Time{}
		return nil
	}
	var seconds int64
	var nanos int32
	err := scan(b, "Timestamp", func(num int32) bool { return num == 1 || num == 2 }, func(num int32, wt, i int) (int, error) {
		if wt != wireVarint {
			return 0, wrongWireType(wt, "Seconds")
		}
		v, next, err := uvarint(b, i)
		if num == 1 {
			seconds = int64(v)
		} else {
			nanos = int32(v)
		}
		return next, err
	})
	if err != nil {
		return err
	}
	if micro {
		*t = time.Unix(seconds, int64(time.Duration(nanos).Truncate(time.Microsecond))).Local()
	} else {
		*t = time.Unix(seconds, 0).Local()
	}
	return nil
}

// isFirst says a field number is 1.
func isFirst(num int32) bool { return num == 1 }

// decodeQuantity decodes a resource.Quantity from its string, field 1, as
// its hand-written Unmarshal does.
func decodeQuantity(q *resource.Quantity, b []byte) error {
	return scan(b, "Quantity", isFirst, func(_ int32, wt, i int) (int, error) {
		if wt != wireBytes {
			return 0, wrongWireType(wt, "String_")
		}
		s, e, err := span(b, i)
		if err != nil {
			return 0, err
		}
		parsed, err := resource.ParseQuantity(string(b[s:e]))
		if err != nil {
			return 0, err
		}
		*q = parsed
		return e, nil
	})
}

// decodeFieldsV1 decodes a metav1.FieldsV1, whatever its representation,
// through SetRawBytes, as its hand-written Unmarshal does.
func decodeFieldsV1(f *metav1.FieldsV1, b []byte) error {
	return scan(b, "FieldsV1", isFirst, func(_ int32, wt, i int) (int, error) {
		if wt != wireBytes {
			return 0, wrongWireType(wt, "Raw")
		}
		s, e, err := span(b, i)
		if err != nil {
			return 0, err
		}
		f.SetRawBytes(b[s:e])
		return e, nil
	})
}
