package tracefmt

import (
	"sync"

	"github.com/klauspost/compress/zstd"
)

// What an open reader holds between two events blocks is its threads'
// decompressed blocks and its tables, not coders: a merge of thousands of
// ranks (mpitrace export --critical=false) keeps every rank open at once.
// The zstd decoders (one for whole payloads, one for the first pass's
// block prefixes) are the reader's during the first pass only; the second
// pass takes a decoder from the pool for each events block, and the buffer
// of the block's compressed bytes too.

// endScan returns what only the first pass needs: the decoders and the
// scan's buffers; and the room left in the string table.
func (r *RankReader) endScan() {
	r.release()
	r.putPayloadBuf()
	r.scanBuf, r.pfxFrame = nil, nil
	r.strings.trim()
}

// decompressPooled is decompress with a decoder of the pool.
func decompressPooled(payload []byte, raw int, dst []byte) ([]byte, error) {
	dec := decoderPool.Get().(*zstd.Decoder)
	out, err := decompress(dec, payload, raw, dst)
	decoderPool.Put(dec)
	return out, err
}

// payloadBufs holds buffers of compressed payloads (*[]byte) between the
// blocks that need one.
var payloadBufs sync.Pool

// getPayloadBuf returns a buffer of the pool, nil when it has none.
func getPayloadBuf() []byte {
	if p, ok := payloadBufs.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

// putPayloadBuf gives the reader's payload buffer back to the pool.
func (r *RankReader) putPayloadBuf() {
	if r.cbuf != nil {
		b := r.cbuf
		payloadBufs.Put(&b)
		r.cbuf = nil
	}
}
