package remote

import (
	"context"
	"strings"
	"testing"
)

// A transport that ends before the greeting is answered: the error
// has its exit status and its last words.
func TestDialSaysTheTransportsEnd(t *testing.T) {
	for cmd, want := range map[string][]string{
		"false":                       {"the transport command (false) ended with exit status 1"},
		"echo no route >&2; exit 255": {"ended with exit status 255", "it said: no route"},
	} {
		_, err := Dial(context.Background(), cmd, Options{})
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("--via %s: %v, want %q", cmd, err, w)
			}
		}
	}
}
