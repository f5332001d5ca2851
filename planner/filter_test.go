package planner

import "testing"

func TestTopLevelOr(t *testing.T) {
	for s, want := range map[string]bool{
		"a == 1 || b == 2":                   true,
		"(a == 1 && b == 2) || c == 3":       true,
		"(a == 1 && b) || (c && d)":          true,
		"(a == 1 || b == 2)":                 false,
		"a == 1 && (b || c)":                 false,
		`comm == "x||y"`:                     false,
		`comm == "a\"||" && b == 1`:          false,
		`comm ~ 'p||q' || pid == 1`:          true,
		"common_pid == 1 || common_pid == 2": true,
	} {
		if got := topLevelOr(s); got != want {
			t.Errorf("topLevelOr(%q) = %v, want %v", s, got, want)
		}
	}
	if got, want := andTerms([]string{"(a && b) || (c && d)", "", "e"}), "((a && b) || (c && d)) && e"; got != want {
		t.Errorf("andTerms = %q, want %q", got, want)
	}
	if got, want := andTerms([]string{"a || b"}), "a || b"; got != want {
		t.Errorf("andTerms of one term = %q, want %q", got, want)
	}
}
