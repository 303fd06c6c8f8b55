package authwebhook

import "testing"

func TestCacheKeysTellQuestionsApart(t *testing.T) {
	doc := []Attribute{{Key: "doc", Verb: ReadWrite}}
	questions := []struct {
		project, url string
		r            Request
	}{
		{"p", "http://a/", Request{Token: "ab", Method: "c"}},
		{"p", "http://a/", Request{Token: "a", Method: "bc"}},
		{"p", "http://a/", Request{Token: "a", Method: "bc", Attributes: []Attribute{}}},
		{"p", "http://a/", Request{Token: "a", Method: "bc", Attributes: doc}},
		{"p", "http://a/", Request{Token: "a", Method: "bc", Attributes: []Attribute{{Key: "doc", Verb: Read}}}},
		{"p", "http://a/", Request{Token: "a", Method: "bc", Attributes: []Attribute{{Key: "docr", Verb: "w"}}}},
		{"p", "http://b/", Request{Token: "a", Method: "bc", Attributes: doc}},
		{"q", "http://b/", Request{Token: "a", Method: "bc", Attributes: doc}},
	}
	seen := map[cacheKey]int{}
	for i, q := range questions {
		k := newCacheKey(q.project, q.url, q.r)
		if j, ok := seen[k]; ok {
			t.Fatalf("questions %d and %d share a cache key", j, i)
		}
		seen[k] = i
	}
	if newCacheKey("p", "u", Request{Token: "t", Method: "m", Attributes: doc}) !=
		newCacheKey("p", "u", Request{Project: "ignored", Token: "t", Method: "m", Attributes: []Attribute{{Key: "doc", Verb: ReadWrite}}}) {
		t.Fatal("the same question got two keys")
	}
}
