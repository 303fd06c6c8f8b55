package snapcodec_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"

	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/snapcodec"
)

func TestRoundTrip(t *testing.T) {
	var c snapcodec.Codec
	random := make([]byte, 1<<20)
	_, _ = rand.Read(random)
	for name, raw := range map[string][]byte{
		"empty": {}, "snapshot": dbtest.SnapshotData(256 << 10), "random": random,
	} {
		packed, err := c.Compress(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decompress(packed, len(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, raw) {
			t.Fatalf("%s: round trip changed the bytes", name)
		}
		t.Logf("%s: %d -> %d bytes", name, len(raw), len(packed))
	}
}

func TestCorrupt(t *testing.T) {
	var c snapcodec.Codec
	raw := dbtest.SnapshotData(64 << 10)
	packed, err := c.Compress(raw)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		packed []byte
		size   int
	}{
		"truncated":  {packed[:len(packed)/2], len(raw)},
		"wrong size": {packed, len(raw) - 1},
		"flipped":    {flip(packed, len(packed)/2), len(raw)},
	}
	for name, tc := range cases {
		if _, err := c.Decompress(tc.packed, tc.size); !errors.Is(err, snapcodec.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	out := bytes.Clone(b)
	out[i] ^= 0x40
	return out
}

// BenchmarkCodecs compares the candidate formats on a 1 MB snapshot: ratio
// (stored bytes per raw byte), and compress + decompress speed.
func BenchmarkCodecs(b *testing.B) {
	raw := dbtest.SnapshotData(1 << 20)
	type codec struct {
		enc func([]byte) []byte
		dec func([]byte) ([]byte, error)
	}
	zstdAt := func(level zstd.EncoderLevel) codec {
		enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(true))
		dec, _ := zstd.NewReader(nil)
		return codec{
			func(r []byte) []byte { return enc.EncodeAll(r, nil) },
			func(p []byte) ([]byte, error) { return dec.DecodeAll(p, nil) },
		}
	}
	codecs := []struct {
		name string
		codec
	}{
		{"zstd-fastest", zstdAt(zstd.SpeedFastest)},
		{"zstd-default", zstdAt(zstd.SpeedDefault)},
		{"zstd-better", zstdAt(zstd.SpeedBetterCompression)},
		{"snappy", codec{func(r []byte) []byte { return snappy.Encode(nil, r) }, func(p []byte) ([]byte, error) { return snappy.Decode(nil, p) }}},
		{"s2", codec{func(r []byte) []byte { return s2.Encode(nil, r) }, func(p []byte) ([]byte, error) { return s2.Decode(nil, p) }}},
		{"s2-better", codec{func(r []byte) []byte { return s2.EncodeBetter(nil, r) }, func(p []byte) ([]byte, error) { return s2.Decode(nil, p) }}},
	}
	for _, c := range codecs {
		packed := c.enc(raw)
		b.Run(c.name+"/compress", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				c.enc(raw)
			}
			b.ReportMetric(float64(len(packed))/float64(len(raw)), "ratio")
		})
		b.Run(c.name+"/decompress", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := c.dec(packed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
