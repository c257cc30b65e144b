// Package wc is the WordCount job, shared by the example program, its
// tests and the benchmark, so that all three run exactly the same code.
package wc

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/weirproject/weir/stream"
)

// WordCount is a word and how often it occurred.
type WordCount struct {
	Word  string
	Count int64
}

// String formats the record as the example prints it: "word count".
func (w WordCount) String() string { return w.Word + " " + strconv.FormatInt(w.Count, 10) }

// Tokenize lowercases line and calls emit for every word: every maximal run
// of characters that are Unicode letters or digits. It agrees with
// strings.FieldsFunc(strings.ToLower(line), not letter-or-digit) but does
// not allocate for lines without upper-case letters: words are substrings
// of the (lowercased) line.
func Tokenize(line string, emit func(word string)) {
	lower := line
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			lower = toLower(line, i)
			break
		}
	}
	start := -1
	for i := 0; i < len(lower); {
		c := lower[i]
		var word bool
		size := 1
		if c < utf8.RuneSelf {
			word = ('a' <= c && c <= 'z') || ('0' <= c && c <= '9')
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(lower[i:])
			word = r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
			if r == utf8.RuneError && size == 3 {
				// A literal U+FFFD (also what invalid bytes become) is a
				// symbol, not a letter.
				word = false
			}
		}
		if word {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			emit(lower[start:i])
			start = -1
		}
		i += size
	}
	if start >= 0 {
		emit(lower[start:])
	}
}

// toLower lowercases s, whose first i bytes are already lower-case ASCII,
// exactly as strings.ToLower does (invalid bytes become U+FFFD).
func toLower(s string, i int) string {
	buf := make([]byte, 0, len(s)+4)
	buf = append(buf, s[:i]...)
	for _, r := range s[i:] {
		buf = utf8.AppendRune(buf, unicode.ToLower(r))
	}
	return string(buf)
}

// Build adds the WordCount dataflow to env: lines are tokenized into
// (word, 1), keyed by word and summed. It returns the stream of counts; in
// batch mode each word appears once with its final count.
func Build(lines *stream.Stream[string]) *stream.Stream[WordCount] {
	words := stream.FlatMap(lines, func(line string, out stream.Collector[WordCount]) {
		Tokenize(line, func(w string) { out.Collect(WordCount{Word: w, Count: 1}) })
	}).Name("tokenize")
	return stream.Sum(stream.KeyBy(words, func(w WordCount) string { return w.Word }),
		func(w *WordCount) *int64 { return &w.Count }).Name("count")
}
