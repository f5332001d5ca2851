// Package compiler turns sqlhist's SQL dialect into a checked query model
// ([Script], [Query]) with exact positions in the source (package
// source's [source.Pos]), reporting what it refuses as [source.Diags].
//
// It is the only package that imports the tidb SQL parser. A small
// pre-lexer first reads the dialect the parser does not know (==, ~,
// CAST(x AS HEX), backslash-escaped keywords, dotted names such as
// call_site.sym-offset, literal backslashes in strings) and replaces every
// name, number and string by a unique placeholder, so that each leaf of
// the parser's tree maps back to one source token.
//
// Its API is internal to sqlhist and not stable.
package compiler
