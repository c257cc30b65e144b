package config

import (
	"io"
	"strings"
)

const markdownIntro = `# Configuration

<!-- Generated from the option catalog in config/options.go by config.WriteMarkdown; do not edit. Regenerate with: go generate ./config -->

Options are set in a YAML file passed with ` + "`--config FILE`" + ` and with ` + "`-D key=value`" + ` flags;
flags override the file. The file may use flat dotted keys, nested maps, or both:

` + "```yaml" + `
execution.buffer-timeout: 10 ms
pipeline:
  max-parallelism: 256
` + "```" + `

Durations are written as ` + "`100 ms`, `10s`, `1 min`, `2 h`, `1d`" + ` or Go-style ` + "`1m30s`" + `; a bare number means
milliseconds. Memory sizes are written as ` + "`32kb`, `64 mb`, `1 gb`" + `, with binary units (1 kb = 1024 bytes);
a bare number means bytes. Enum values and units are case-insensitive. An unknown key or an invalid value
is an error.

`

// WriteMarkdown writes the configuration reference, docs/configuration.md:
// how to set options, then a table of every option. A test compares the
// committed file with this output, so the docs cannot drift from the catalog.
func WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString(markdownIntro)
	b.WriteString("| Key | Type | Default | Description |\n")
	b.WriteString("| --- | --- | --- | --- |\n")
	for _, o := range Options() {
		def := "(none)"
		if o.Default != "" {
			def = "`" + o.Default + "`"
		}
		desc := o.Description
		if len(o.Values) > 0 {
			desc += " Possible values: `" + strings.Join(o.Values, "`, `") + "`."
		}
		desc = strings.ReplaceAll(desc, "|", `\|`)
		b.WriteString("| `" + o.Key + "` | " + o.Type + " | " + def + " | " + desc + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
