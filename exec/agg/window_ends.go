package agg

// sessionEnds is a min-heap of live session windows by end, so that a watermark fires the sessions it passed
// without scanning every live one (fireSessions did: at parallelism 2, where a subtask's watermark advances in
// more, smaller steps, that scan was a fifth of q11's CPU).
//
// Entries are queued once per group, at its creation or restore, and checked when they come out: a group freed
// since (its generation changed, or it is no longer live) is dropped; a session extended since (its end grew, as
// a merge or a later row makes it) is queued again under its new end. So the heap holds at most one entry per
// group id and generation, and a session's end only grows.
type sessionEnds []sessionEnd

type sessionEnd struct {
	end int64
	g   int32
	gen uint32
}

func (h *sessionEnds) push(e sessionEnd) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].end <= s[i].end {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *sessionEnds) pop() sessionEnd {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && s[l].end < s[m].end {
			m = l
		}
		if r := l + 1; r < n && s[r].end < s[m].end {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
