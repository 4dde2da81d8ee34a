package dashboard

import (
	"net/http"
	"sort"
	"strconv"

	"tunebot/bot"
)

const (
	// BytesPerRead is how much answer one page read buys: each BytesPerRead more costs one
	// more of the person's reads, so a large answer (a curves answer, a session's tags)
	// uses the read limit up faster than a small one (issue 27).
	BytesPerRead = 256 << 10
	// TagsPage is how many tags one /tags answer lists unless asked for fewer or more (at
	// most maxTagsPage): more than a person scrolls through, and about 50 KB.
	TagsPage    = 500
	maxTagsPage = 2000
)

// tagsPageOf reads the after and limit of a /tags request.
func tagsPageOf(r *http.Request) (after string, limit int, err error) {
	q := r.URL.Query()
	after, limit = q.Get("after"), TagsPage
	if len(after) > 1024 {
		return "", 0, badRequest("after %q is too long to be a tag", bot.Truncate(after, 40))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTagsPage {
			return "", 0, badRequest("limit must be a number from 1 to %d, not %q", maxTagsPage, bot.Truncate(v, 20))
		}
		limit = n
	}
	return after, limit, nil
}

// pageOf returns at most limit of sorted after the value after, and the after of the
// next page ("" when this one is the last).
func pageOf(sorted []string, after string, limit int) (page []string, next string) {
	i := 0
	if after != "" {
		i = sort.Search(len(sorted), func(i int) bool { return sorted[i] > after })
	}
	page = sorted[i:min(i+limit, len(sorted))]
	if i+limit < len(sorted) {
		next = page[len(page)-1]
	}
	return page, next
}

// inPage keeps those of tags (sorted) that are in page (sorted, a range of all tags).
func inPage(tags, page []string) []string {
	if len(page) == 0 {
		return []string{}
	}
	lo := sort.SearchStrings(tags, page[0])
	hi := sort.Search(len(tags), func(i int) bool { return tags[i] > page[len(page)-1] })
	return tags[lo:max(lo, hi)]
}
