package vm

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
)

// File is a file to place in the guest's initramfs.
type File struct {
	Path string      // absolute guest path, e.g. "/work/sqlhist"
	Mode os.FileMode // permission bits; 0 means 0644
	Data []byte
}

// Initramfs collects the members of an initramfs image.
type Initramfs struct {
	entries map[string]CpioEntry
}

// NewInitramfs returns an image with the standard directories, /dev/console
// and, when busybox is non-empty, that (static) busybox at /bin/busybox with
// a symlink for each of its applets.
func NewInitramfs(busybox string) (*Initramfs, error) {
	im := &Initramfs{entries: map[string]CpioEntry{}}
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "tmp", "root", "work", "mnt", "run"} {
		im.Dir(d)
	}
	im.entries["dev/console"] = CpioEntry{Name: "dev/console", Mode: modeCharDev | 0o600, Major: 5, Minor: 1}
	im.entries["dev/null"] = CpioEntry{Name: "dev/null", Mode: modeCharDev | 0o666, Major: 1, Minor: 3}
	if busybox == "" {
		return im, nil
	}
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, err
	}
	if err := im.Add(File{Path: "/bin/busybox", Mode: 0o755, Data: bin}); err != nil {
		return nil, err
	}
	out, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		// A busybox of another architecture does not run here: the
		// host's (the same Debian release) has the same applets.
		host, herr := StaticBusybox()
		if herr != nil {
			return nil, fmt.Errorf("%s --list-full: %v", busybox, err)
		}
		if out, err = exec.Command(host, "--list-full").Output(); err != nil {
			return nil, fmt.Errorf("%s --list-full: %v", host, err)
		}
	}
	applets := strings.Fields(string(out))
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s --list-full lists no applets", busybox)
	}
	for _, a := range applets {
		a = strings.TrimPrefix(a, "/")
		// A link named busybox would point at itself (ELOOP when exec'd).
		if path.Base(a) == "busybox" {
			continue
		}
		im.Symlink(a, "/bin/busybox")
	}
	return im, nil
}

// Dir adds a directory (and its parents).
func (im *Initramfs) Dir(p string) {
	p = strings.Trim(path.Clean("/"+p), "/")
	for p != "" && p != "." {
		if _, ok := im.entries[p]; !ok {
			im.entries[p] = CpioEntry{Name: p, Mode: modeDir | 0o755}
		}
		p = path.Dir(p)
		if p == "." {
			break
		}
	}
}

// Symlink adds a symbolic link at p pointing to target, unless p exists.
func (im *Initramfs) Symlink(p, target string) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if _, ok := im.entries[p]; ok {
		return
	}
	im.Dir(path.Dir(p))
	im.entries[p] = CpioEntry{Name: p, Mode: modeSymlink | 0o777, Data: []byte(target)}
}

// Add adds (or replaces) a regular file, creating its parent directories.
func (im *Initramfs) Add(f File) error {
	if !strings.HasPrefix(f.Path, "/") {
		return fmt.Errorf("initramfs: path %q is not absolute", f.Path)
	}
	p := strings.TrimPrefix(path.Clean(f.Path), "/")
	if p == "" {
		return fmt.Errorf("initramfs: bad path %q", f.Path)
	}
	mode := uint32(f.Mode.Perm())
	if mode == 0 {
		mode = 0o644
	}
	im.Dir(path.Dir(p))
	im.entries[p] = CpioEntry{Name: p, Mode: modeRegular | mode, Data: f.Data}
	return nil
}

// Bytes returns the gzip-compressed newc cpio image. Directories come before
// their contents, and the order is deterministic.
func (im *Initramfs) Bytes() ([]byte, error) {
	names := make([]string, 0, len(im.entries))
	for n := range im.entries {
		names = append(names, n)
	}
	// Sorting by path puts a directory before everything under it.
	sort.Strings(names)
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	cw := NewCpioWriter(zw)
	for _, n := range names {
		if err := cw.WriteEntry(im.entries[n]); err != nil {
			return nil, err
		}
	}
	if err := cw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
