package expr

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// regex is a compiled pattern with a literal prefilter: Go's matcher walks every start position of a text, so a
// pattern whose matches all contain a fixed string is searched only where that string occurs.
//
// lit is a literal of the pattern's top-level concatenation (case-sensitive, without U+FFFD, which also stands
// for invalid UTF-8 in the text): every match contains it, so a text without it has no match. When what precedes
// lit in the pattern spans at most pre bytes, a match starting at s holds lit at some q in [s, s+pre], so no match
// starts before (first occurrence of lit) - pre: the search starts there (moved back to a rune start, where Go's
// matcher would also decode). A search that starts past the text's beginning runs mid, the pattern with its
// beginning-of-text assertions (^, \A) made impossible, which is what they are at any such position. Patterns
// whose assertions look at the previous character ((?m)^, \b, \B) are not searched from an offset (mid is nil),
// and results are the same bits as re's on the whole text in every case (regex_test.go checks it against re).
type regex struct {
	re  *regexp.Regexp
	lit string         // "" when the pattern has no usable literal
	pre int            // bytes before lit in a match at most; -1 unbounded
	mid *regexp.Regexp // re for a search starting past the text's beginning; nil: no offset search
}

func newRegex(re *regexp.Regexp) *regex {
	x := &regex{re: re, pre: -1}
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return x
	}
	lit, pre := topLiteral(tree)
	if lit == "" {
		return x
	}
	x.lit, x.pre = lit, pre
	if pre < 0 || hasContextAssert(tree) {
		return x
	}
	if !hasBeginText(tree) {
		x.mid = re
		return x
	}
	mid, err := regexp.Compile(noBeginText(tree).String())
	if err != nil || mid.NumSubexp() != re.NumSubexp() {
		return x
	}
	x.mid = mid
	return x
}

// topLiteral returns the longest usable literal among the elements of the top-level concatenation of re (re itself
// when it is not one) and the most bytes the elements before it can match (-1: unbounded).
func topLiteral(re *syntax.Regexp) (string, int) {
	elems := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		elems = re.Sub
	}
	best, bestPre, pre := "", -1, 0
	for _, e := range elems {
		if e.Op == syntax.OpLiteral && e.Flags&syntax.FoldCase == 0 {
			s := string(e.Rune)
			if !strings.ContainsRune(s, utf8.RuneError) && len(s) > len(best) {
				best, bestPre = s, pre
			}
		}
		w := maxWidth(e)
		if w < 0 || pre < 0 {
			pre = -1
		} else {
			pre += w
		}
	}
	return best, bestPre
}

// maxWidth is the most bytes re can match, -1 when unbounded.
func maxWidth(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpNoMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				n += utf8.UTFMax
			} else {
				n += max(utf8.RuneLen(r), 1)
			}
		}
		return n
	case syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return utf8.UTFMax
	case syntax.OpCapture:
		return maxWidth(re.Sub[0])
	case syntax.OpQuest:
		return maxWidth(re.Sub[0])
	case syntax.OpRepeat:
		w := maxWidth(re.Sub[0])
		if re.Max < 0 {
			if w == 0 {
				return 0
			}
			return -1
		}
		if w < 0 {
			return -1
		}
		return w * re.Max
	case syntax.OpStar, syntax.OpPlus:
		if maxWidth(re.Sub[0]) == 0 {
			return 0
		}
		return -1
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			w := maxWidth(s)
			if w < 0 {
				return -1
			}
			n += w
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			w := maxWidth(s)
			if w < 0 {
				return -1
			}
			n = max(n, w)
		}
		return n
	}
	return -1
}

func anyOp(re *syntax.Regexp, f func(syntax.Op) bool) bool {
	if f(re.Op) {
		return true
	}
	for _, s := range re.Sub {
		if anyOp(s, f) {
			return true
		}
	}
	return false
}

// hasContextAssert reports an assertion that looks at the character before a position.
func hasContextAssert(re *syntax.Regexp) bool {
	return anyOp(re, func(op syntax.Op) bool {
		return op == syntax.OpBeginLine || op == syntax.OpWordBoundary || op == syntax.OpNoWordBoundary
	})
}

func hasBeginText(re *syntax.Regexp) bool {
	return anyOp(re, func(op syntax.Op) bool { return op == syntax.OpBeginText })
}

// noBeginText is a copy of re with every beginning-of-text assertion replaced by a pattern that never matches.
func noBeginText(re *syntax.Regexp) *syntax.Regexp {
	c := *re
	if c.Op == syntax.OpBeginText {
		return &syntax.Regexp{Op: syntax.OpNoMatch}
	}
	if len(re.Sub) > 0 {
		c.Sub = make([]*syntax.Regexp, len(re.Sub))
		for i, s := range re.Sub {
			c.Sub[i] = noBeginText(s)
		}
	}
	return &c
}

// start returns where a search of s must begin to find re's leftmost match, and false when s has no match.
func (x *regex) start(s string) (int, bool) {
	if x.lit == "" {
		return 0, true
	}
	q := strings.Index(s, x.lit)
	if q < 0 {
		return 0, false
	}
	if x.mid == nil || q <= x.pre {
		return 0, true
	}
	p := q - x.pre
	for p > 0 && !utf8.RuneStart(s[p]) {
		p--
	}
	return p, true
}

// MatchString is re.MatchString(s).
func (x *regex) MatchString(s string) bool {
	p, ok := x.start(s)
	switch {
	case !ok:
		return false
	case p == 0:
		return x.re.MatchString(s)
	}
	return x.mid.MatchString(s[p:])
}

// FindStringSubmatchIndex is re.FindStringSubmatchIndex(s).
func (x *regex) FindStringSubmatchIndex(s string) []int {
	p, ok := x.start(s)
	switch {
	case !ok:
		return nil
	case p == 0:
		return x.re.FindStringSubmatchIndex(s)
	}
	m := x.mid.FindStringSubmatchIndex(s[p:])
	for i := range m {
		if m[i] >= 0 {
			m[i] += p
		}
	}
	return m
}

// NumSubexp is re.NumSubexp().
func (x *regex) NumSubexp() int { return x.re.NumSubexp() }
