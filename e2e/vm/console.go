package vm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Console markers. The init script prints them with a per-boot nonce so
// neither kernel messages nor the guest's own output can fake them. In the
// init script the nonce is spliced in at run time ("-$N"), so even printing
// /init does not produce a marker.
const (
	markBegin     = "@@SQLHIST-BEGIN-%s@@"
	markEnd       = "@@SQLHIST-END-%s status="
	markErrBegin  = "@@SQLHIST-STDERR-%s@@"
	markErrEnd    = "@@SQLHIST-STDERR-END-%s@@"
	markFileBegin = "@@SQLHIST-FILES-%s@@"
	markFileEnd   = "@@SQLHIST-FILES-END-%s@@"
	markDone      = "@@SQLHIST-DONE-%s@@"
)

// parsed is what the host takes out of a console log.
type parsed struct {
	begun, ended, done bool
	stdout, stderr     string
	status             int
	files              map[string][]byte
	// stderrEnded and filesEnded say that the stderr and files
	// sections came whole (their end markers).
	stderrEnded, filesEnded bool
}

// complete reports whether everything g asked for came back: the DONE
// marker, or, should the console lose the last line before the guest
// powered off, every section g expects after the END line whole (its
// stderr apart, its files), each ended by its own marker.
func (p parsed) complete(g Guest) bool {
	if p.done {
		return true
	}
	return p.ended && (g.CombinedOutput || p.stderrEnded) && (len(g.Collect) == 0 || p.filesEnded)
}

var endRe = regexp.MustCompile(`^(.*)@@SQLHIST-END-([0-9a-f]+) status=(-?\d+)@@$`)

// normalizeConsole turns the serial console's CRLF line ends into LF.
func normalizeConsole(s string) string {
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// parseConsole splits a (normalized) console log into the script's output,
// its exit status, its stderr and the files it sent back. Missing markers
// are reported through the flags, not as errors; malformed file payloads are
// errors.
func parseConsole(console, nonce string) (parsed, error) {
	var p parsed
	lines := strings.Split(normalizeConsole(console), "\n")
	begin := fmt.Sprintf(markBegin, nonce)
	i := 0
	for ; i < len(lines); i++ {
		if strings.HasSuffix(strings.TrimRight(lines[i], "\r"), begin) {
			p.begun = true
			i++
			break
		}
	}
	if !p.begun {
		return p, nil
	}
	var out []string
	for ; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\r")
		if m := endRe.FindStringSubmatch(l); m != nil && m[2] == nonce {
			// Output without a final newline ends up on the marker's line.
			if m[1] != "" {
				out = append(out, m[1])
			}
			p.ended = true
			p.status, _ = strconv.Atoi(m[3])
			i++
			break
		}
		out = append(out, l)
	}
	if !p.ended && len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1] // the log's final newline
	}
	p.stdout = joinLines(out)
	if !p.ended {
		return p, nil
	}
	section := func(open, close string) (string, bool) {
		o, c := fmt.Sprintf(open, nonce), fmt.Sprintf(close, nonce)
		for j := i; j < len(lines); j++ {
			if strings.TrimRight(lines[j], "\r") != o {
				continue
			}
			var body []string
			for k := j + 1; k < len(lines); k++ {
				l := strings.TrimRight(lines[k], "\r")
				if strings.HasSuffix(l, c) {
					if pre := strings.TrimSuffix(l, c); pre != "" {
						body = append(body, pre)
					}
					return joinLines(body), true
				}
				body = append(body, l)
			}
			return joinLines(body), false
		}
		return "", false
	}
	p.stderr, p.stderrEnded = section(markErrBegin, markErrEnd)
	done := fmt.Sprintf(markDone, nonce)
	for j := i; j < len(lines); j++ {
		if strings.TrimRight(lines[j], "\r") == done {
			p.done = true
		}
	}
	if b64, ok := section(markFileBegin, markFileEnd); ok {
		p.filesEnded = true
		files, err := decodeTarGzBase64(b64)
		if err != nil {
			return p, err
		}
		p.files = files
	}
	return p, nil
}

func joinLines(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return strings.Join(l, "\n") + "\n"
}

// decodeTarGzBase64 decodes the output of `tar cz ... | base64` (line
// breaks and stray carriage returns are ignored) into a map from path (as
// stored in the archive, without a leading "./" or "/") to contents.
// Only regular files are returned.
func decodeTarGzBase64(s string) (map[string][]byte, error) {
	clean := strings.Map(func(r rune) rune {
		switch r {
		case '\n', '\r', ' ', '\t':
			return -1
		}
		return r
	}, s)
	raw, err := base64.StdEncoding.DecodeString(clean)
	if err != nil {
		return nil, fmt.Errorf("files from guest: base64: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("files from guest: gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("files from guest: tar: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("files from guest: tar: %s: %w", h.Name, err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
		files[name] = b
	}
	return files, nil
}
