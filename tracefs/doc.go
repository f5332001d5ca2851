// Package tracefs is sqlhist's window on the kernel's tracing file system:
// the event catalog (event format files read from an [fs.FS]: a live tracefs,
// a copy of one, or a catalog embedded in the binary), the kernel features a
// catalog advertises, the narrow [Writer] through which commands are
// applied, and parsers for what the kernel prints back.
//
// It is a leaf package: it imports nothing from the rest of sqlhist. Its API
// is internal to sqlhist and not stable.
//
// # Laziness
//
// A tracefs holds thousands of events. [Catalog] reads the directory listing
// once to build a name index and parses only the format files a query names,
// so compiling against a full tracefs costs about the same as against a
// directory with two events.
//
// # Reading back
//
// [ParseHist] reads a hist file (every histogram of an event, with typed
// keys for each modifier, values, onmax/onchange lines and Totals),
// [ParseTraceLine], [ParseTrace] and [ParseFields] read the trace file, and
// [ParseErrorLog] with [NewEntries] finds the error_log entries a write
// added. They follow the text of Debian's 6.1, 6.12 and 7.2 kernels; the
// real samples in testdata are their tests.
package tracefs
