package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Output formats of -o/--output, as upstream's CLI names them.
const (
	tableOutput = ""
	jsonOutput  = "json"
	yamlOutput  = "yaml"
)

func checkOutput(format string) error {
	switch format {
	case tableOutput, jsonOutput, yamlOutput:
		return nil
	}
	return usageError{error: fmt.Errorf("--output %q: want yaml or json (or nothing for a table)", format)}
}

// printAs writes v as indented JSON or as YAML.
func printAs(w io.Writer, format string, v any) error {
	switch format {
	case yamlOutput:
		out, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode YAML: %w", err)
		}
		_, err = fmt.Fprintln(w, string(out))
		return err
	default:
		out, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		_, err = fmt.Fprintln(w, string(out))
		return err
	}
}

// printTable writes rows under a header the way upstream's CLI lays its
// tables out: no borders or rules, each cell padded by one space on both
// sides, numbers aligned right.
func printTable(w io.Writer, header []string, rows [][]any) error {
	cells := make([][]string, 0, len(rows)+1)
	right := make([]bool, len(header))
	cells = append(cells, header)
	for _, row := range rows {
		line := make([]string, len(header))
		for i, v := range row {
			switch v.(type) {
			case int, int32, int64, uint64:
				right[i] = true
			}
			line[i] = fmt.Sprint(v)
		}
		cells = append(cells, line)
	}
	width := make([]int, len(header))
	for _, line := range cells {
		for i, c := range line {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for n, line := range cells {
		for i, c := range line {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if right[i] && n > 0 {
				b.WriteString(" " + pad + c + " ")
			} else {
				b.WriteString(" " + c + pad + " ")
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// humanDuration says how long ago something was, in upstream's words.
func humanDuration(d time.Duration) string {
	seconds := int(d.Seconds())
	minutes := int(d.Minutes())
	hours := int(d.Hours() + 0.5)
	switch {
	case seconds < 1:
		return "Less than a second"
	case seconds == 1:
		return "1 second"
	case seconds < 60:
		return fmt.Sprintf("%d seconds", seconds)
	case minutes == 1:
		return "About a minute"
	case minutes < 60:
		return fmt.Sprintf("%d minutes", minutes)
	case hours == 1:
		return "About an hour"
	case hours < 48:
		return fmt.Sprintf("%d hours", hours)
	case hours < 24*7*2:
		return fmt.Sprintf("%d days", hours/24)
	case hours < 24*30*2:
		return fmt.Sprintf("%d weeks", hours/24/7)
	case hours < 24*365*2:
		return fmt.Sprintf("%d months", hours/24/30)
	}
	return fmt.Sprintf("%d years", int(d.Hours())/24/365)
}

func ago(t time.Time) string {
	return humanDuration(time.Now().UTC().Sub(t))
}
