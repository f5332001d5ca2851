package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// pathError is an error at a value inside a JSON document: the path to
// it from the document (object keys and list indices, outermost first)
// and, when the error knows it, an offset inside that value.
type pathError struct {
	path  []any // string: a struct's field (matched without case, as encoding/json does); mapKey: a map's key; int: a list's index
	inner int   // offset inside the value, -1 when unknown
	end   bool  // inner is the last byte of a value whose start is wanted
	text  string
}

func (e *pathError) Error() string { return e.text }

// mapKey is a path's key of a JSON object decoded into a map: matched
// exactly.
type mapKey string

// within is err, whose text becomes text, at the value segs leads to from
// where err's own path starts.
func within(err error, text string, segs ...any) error {
	pe := &pathError{path: append([]any(nil), segs...), inner: -1, text: text}
	var in *pathError
	if errors.As(err, &in) {
		pe.path = append(pe.path, in.path...)
		pe.inner, pe.end = in.inner, in.end
	} else if off, end, ok := decodeOffset(err); ok {
		pe.inner, pe.end = off, end
	}
	return pe
}

// decodeOffset is where in the value it decoded a decoding error is; end
// tells that it is the last byte of the value of the wrong type.
func decodeOffset(err error) (off int, end, ok bool) {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return int(se.Offset) - 1, false, true
	case errors.As(err, &te):
		return int(te.Offset) - 1, true, true
	}
	return 0, false, false
}

// scalarStart is the start of the string, number or literal whose last
// byte is at end (end itself for an object or a list).
func scalarStart(data []byte, end int) int {
	if end < 0 || end >= len(data) {
		return end
	}
	if data[end] == '"' {
		for i := end - 1; i >= 0; i-- {
			if data[i] != '"' {
				continue
			}
			bs := 0
			for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
				bs++
			}
			if bs%2 == 0 {
				return i
			}
		}
		return end
	}
	const scalar = "+-.0123456789eEaflnrstu"
	if strings.IndexByte(scalar, data[end]) < 0 {
		return end
	}
	i := end
	for i > 0 && strings.IndexByte(scalar, data[i-1]) >= 0 {
		i--
	}
	return i
}

// placeError is err at the document that starts at offset at of data:
// placed at the value its path names when it has one, else at the
// document's start.
func placeError(data []byte, at int, err error) error {
	off := at
	var pe *pathError
	if errors.As(err, &pe) {
		if v, ok := valueOffset(data, at, pe.path); ok {
			off = v
			if pe.inner >= 0 {
				off = min(v+pe.inner, len(data))
				if pe.end {
					off = scalarStart(data, off)
				}
			}
		}
	}
	return posError(data, off, "%v", err)
}

// valueOffset walks the JSON tokens of the document at start to the value
// path names and returns its offset.
func valueOffset(data []byte, start int, path []any) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(data[start:]))
	at := func(seps string) int {
		off := start + int(dec.InputOffset())
		for off < len(data) && strings.IndexByte(" \t\r\n"+seps, data[off]) >= 0 {
			off++
		}
		return off
	}
	off := at("")
	for _, seg := range path {
		tok, err := dec.Token()
		if err != nil {
			return 0, false
		}
		switch seg := seg.(type) {
		case string, mapKey:
			if tok != json.Delim('{') || !skipToKey(dec, seg) {
				return 0, false
			}
			off = at(":")
		case int:
			if tok != json.Delim('[') {
				return 0, false
			}
			for i := 0; i < seg; i++ {
				var skip json.RawMessage
				if !dec.More() || dec.Decode(&skip) != nil {
					return 0, false
				}
			}
			if !dec.More() {
				return 0, false
			}
			off = at(",")
		}
	}
	return off, true
}

// skipToKey reads an object's members up to the first key that matches
// seg (a field's name without case, a mapKey exactly), leaving dec before
// its value.
func skipToKey(dec *json.Decoder, seg any) bool {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := tok.(string)
		switch seg := seg.(type) {
		case mapKey:
			if k == string(seg) {
				return true
			}
		case string:
			if strings.EqualFold(k, seg) {
				return true
			}
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
