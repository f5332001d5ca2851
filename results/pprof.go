package results

import (
	"compress/gzip"
	"io"
	"slices"
)

// pprofProfile is what this package puts in a pprof profile: sample
// types, samples (a location per frame, values, string labels),
// functions (function i is location i: one line each, in one mapping,
// the kernel's), comments and the default sample type. It is encoded
// here as profile.proto (github.com/google/pprof/proto/profile.proto)
// lays it out, rather than with the pprof package: that package compiles
// a few dozen regular expressions when a process starts, which every run
// paid (0.2 ms of 4.5 on this host; 3% of a start) whether it wrote a
// profile or not. The tests read what is written with the pprof package.
type pprofProfile struct {
	sampleTypes []sampleType
	defaultType string
	samples     []pprofSample
	functions   []string // by ID - 1; location ID i has function ID i
	comments    []string
}

// pprofSample is a sample: its locations from the leaf to the root, its
// values in the order of the sample types, its labels by key.
type pprofSample struct {
	locations []uint64
	values    []int64
	labels    map[string]string
}

// The field numbers of profile.proto's messages, and the wire types.
const (
	ppSampleType        = 1
	ppSample            = 2
	ppMapping           = 3
	ppLocation          = 4
	ppFunction          = 5
	ppStringTable       = 6
	ppComment           = 13
	ppDefaultSampleType = 14

	ppValueTypeType = 1
	ppValueTypeUnit = 2

	ppSampleLocation = 1
	ppSampleValue    = 2
	ppSampleLabel    = 3
	ppLabelKey       = 1
	ppLabelStr       = 2

	ppMappingID           = 1
	ppMappingFilename     = 5
	ppMappingHasFunctions = 7

	ppLocationID      = 1
	ppLocationMapping = 2
	ppLocationLine    = 4
	ppLineFunction    = 1

	ppFunctionID         = 1
	ppFunctionName       = 2
	ppFunctionSystemName = 3

	wireVarint = 0
	wireBytes  = 2
)

// pbuf appends protocol buffer fields to a byte slice.
type pbuf []byte

func (b pbuf) varint(v uint64) pbuf {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func (b pbuf) tag(field, wire int) pbuf { return b.varint(uint64(field)<<3 | uint64(wire)) }

// uint is a varint field; zero is left out, as proto3 leaves defaults.
func (b pbuf) uint(field int, v uint64) pbuf {
	if v == 0 {
		return b
	}
	return b.tag(field, wireVarint).varint(v)
}

func (b pbuf) bytes(field int, v []byte) pbuf {
	return append(b.tag(field, wireBytes).varint(uint64(len(v))), v...)
}

// packed is a packed repeated varint field (an int64's negative values
// as their two's complement, as profile.proto's int64 takes them).
func (b pbuf) packed(field int, vs []uint64) pbuf {
	if len(vs) == 0 {
		return b
	}
	var in pbuf
	for _, v := range vs {
		in = in.varint(v)
	}
	return b.bytes(field, in)
}

// encode returns the profile as profile.proto's bytes.
func (p *pprofProfile) encode() []byte {
	strs := []string{""}
	index := map[string]uint64{"": 0}
	str := func(s string) uint64 {
		if i, ok := index[s]; ok {
			return i
		}
		index[s] = uint64(len(strs))
		strs = append(strs, s)
		return index[s]
	}
	var out pbuf
	for _, t := range p.sampleTypes {
		out = out.bytes(ppSampleType, pbuf(nil).uint(ppValueTypeType, str(t.name)).uint(ppValueTypeUnit, str(t.unit)))
	}
	for _, s := range p.samples {
		values := make([]uint64, len(s.values))
		for i, v := range s.values {
			values[i] = uint64(v)
		}
		m := pbuf(nil).packed(ppSampleLocation, s.locations).packed(ppSampleValue, values)
		keys := make([]string, 0, len(s.labels))
		for k := range s.labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			m = m.bytes(ppSampleLabel, pbuf(nil).uint(ppLabelKey, str(k)).uint(ppLabelStr, str(s.labels[k])))
		}
		out = out.bytes(ppSample, m)
	}
	if len(p.functions) > 0 {
		// One mapping, the kernel, whose functions are known: pprof then
		// neither looks for a binary to symbolize nor warns of none.
		out = out.bytes(ppMapping, pbuf(nil).uint(ppMappingID, 1).uint(ppMappingFilename, str("[kernel.kallsyms]")).uint(ppMappingHasFunctions, 1))
	}
	for i := range p.functions {
		id := uint64(i + 1)
		out = out.bytes(ppLocation, pbuf(nil).uint(ppLocationID, id).uint(ppLocationMapping, 1).bytes(ppLocationLine, pbuf(nil).uint(ppLineFunction, id)))
	}
	for i, name := range p.functions {
		n := str(name)
		out = out.bytes(ppFunction, pbuf(nil).uint(ppFunctionID, uint64(i+1)).uint(ppFunctionName, n).uint(ppFunctionSystemName, n))
	}
	comments := make([]uint64, len(p.comments))
	for i, c := range p.comments {
		comments[i] = str(c)
	}
	def := str(p.defaultType)
	// The string table last: every string above is in it by now.
	for _, s := range strs {
		out = out.bytes(ppStringTable, []byte(s))
	}
	for _, c := range comments {
		out = out.tag(ppComment, wireVarint).varint(c)
	}
	return out.uint(ppDefaultSampleType, def)
}

// write writes the profile gzipped, as pprof reads it.
func (p *pprofProfile) write(w io.Writer) error {
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(p.encode()); err != nil {
		return err
	}
	return zw.Close()
}
