package planner

import "testing"

func mustFilter(t *testing.T, s string) *Filter {
	t.Helper()
	f, err := ParseFilter(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestAndFilters: terms joined by && keep an || term's meaning with
// parentheses, only when there are several terms, and the chain leans
// left as the kernel reads it.
func TestAndFilters(t *testing.T) {
	for _, c := range []struct {
		terms []string
		want  string
	}{
		{[]string{"(a == 1 && b == 2) || (c == 3 && d == 4)", "", "e == 5"}, "((a == 1 && b == 2) || (c == 3 && d == 4)) && e == 5"},
		{[]string{"a == 1 || b == 2"}, "a == 1 || b == 2"},
		{[]string{"(a == 1 || b == 2)", "c == 3"}, "(a == 1 || b == 2) && c == 3"},
		{[]string{"a == 1 && (b == 1 || c == 2)", "d == 4"}, "a == 1 && (b == 1 || c == 2) && d == 4"},
		{[]string{`comm ~ 'p||q' || pid == 1`, "x == 1"}, `(comm ~ 'p||q' || pid == 1) && x == 1`},
		{[]string{"!(a == 1 || b == 2)", "x == 1"}, "!(a == 1 || b == 2) && x == 1"},
		{[]string{"x == 1", "y == 2 && z == 3"}, "x == 1 && y == 2 && z == 3"},
		{[]string{""}, ""},
	} {
		var terms []*Filter
		for _, s := range c.terms {
			if s != "" {
				terms = append(terms, mustFilter(t, s))
			} else {
				terms = append(terms, nil)
			}
		}
		f := andFilters(terms)
		got := ""
		if f != nil {
			got = f.String()
		}
		if got != c.want {
			t.Errorf("andFilters(%q) = %q, want %q", c.terms, got, c.want)
		}
		if f != nil && !f.Equal(mustFilter(t, got)) {
			t.Errorf("andFilters(%q) = %#v, which reads back otherwise", c.terms, f)
		}
	}
}
