package expr

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// randPattern builds a random pattern from pieces that exercise the prefilter: literals, classes, groups,
// alternations, repeats, anchors and assertions.
func randPattern(r *rand.Rand, depth int) string {
	pieces := []string{"a", "b", "ab", "abc", "&", "=", "x=", "é", "\uFFFD", ".", "[^&]", "[a-c]", "\\d", "^", "$",
		"\\A", "\\z", "(?m:^)", "\\b", "\\B", "(?i:ab)", "bab"}
	n := 1 + r.IntN(4)
	var sb strings.Builder
	for range n {
		switch k := r.IntN(10); {
		case depth < 2 && k == 0:
			sb.WriteString("(" + randPattern(r, depth+1) + "|" + randPattern(r, depth+1) + ")")
		case depth < 2 && k == 1:
			sb.WriteString("(?:" + randPattern(r, depth+1) + ")" + []string{"*", "+", "?", "{2}", "{1,3}", "{0,}", "*?"}[r.IntN(7)])
		case depth < 2 && k == 2:
			sb.WriteString("(" + randPattern(r, depth+1) + ")")
		default:
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
	}
	return sb.String()
}

func randText(r *rand.Rand) string {
	alpha := []string{"a", "b", "c", "&", "=", "x", "1", "\n", " ", "é", "\xe9", "\xff", "\xa9", "\uFFFD", "A", "B"}
	n := r.IntN(24)
	var sb strings.Builder
	for range n {
		sb.WriteString(alpha[r.IntN(len(alpha))])
	}
	return sb.String()
}

// TestRegexPrefilter: the prefiltered search gives re's own results, bit for bit, on random patterns and texts
// (invalid UTF-8 included), and on the Nexmark q21 pattern.
func TestRegexPrefilter(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 21))
	check := func(p string, texts []string) (used bool) {
		re, err := regexp.Compile(p)
		if err != nil {
			return false
		}
		x := newRegex(re)
		for _, s := range texts {
			if got, want := x.FindStringSubmatchIndex(s), re.FindStringSubmatchIndex(s); !slices.Equal(got, want) {
				t.Fatalf("pattern %q text %q: FindStringSubmatchIndex %v, want %v (lit %q pre %d mid %v)", p, s, got, want, x.lit, x.pre, x.mid)
			}
			if got, want := x.MatchString(s), re.MatchString(s); got != want {
				t.Fatalf("pattern %q text %q: MatchString %v, want %v", p, s, got, want)
			}
		}
		return x.mid != nil && x.mid != re
	}
	rewritten := 0
	for range 3000 {
		p := randPattern(r, 0)
		texts := make([]string, 60)
		for i := range texts {
			texts[i] = randText(r)
		}
		// texts that hold pieces of the pattern, so that matches are common
		for i := range 20 {
			texts = append(texts, texts[i]+strings.NewReplacer("\\", "", "(", "", ")", "", "|", "", "?", "", ":", "").Replace(p)+texts[i+20])
		}
		if check(p, texts) {
			rewritten++
		}
	}
	if rewritten < 50 {
		t.Fatalf("only %d patterns searched with a rewritten pattern: the test does not exercise it", rewritten)
	}
	q21 := `(&|^)channel_id=([^&]*)`
	x := newRegex(regexp.MustCompile(q21))
	if x.lit != "channel_id=" || x.pre != 1 || x.mid == nil {
		t.Fatalf("q21 pattern: lit %q pre %d mid %v", x.lit, x.pre, x.mid)
	}
	check(q21, []string{"", "channel_id=1", "channel_id=", "xchannel_id=2", "a&channel_id=3&b", "a&channel_id=3&channel_id=4",
		"achannel_id=5&channel_id=6", "https://www.nexmark.com/abc/def/ghi/item.htm?query=1&channel_id=123456",
		"https://www.nexmark.com/abc/def/ghi/item.htm?query=1", "é&channel_id=é", "\xff&channel_id=\xff"})
}
