//! The compression codecs of Kafka's batch attributes: none, gzip, snappy (xerial framing),
//! lz4 (LZ4 frame) and zstd. The whole records region after the 61-byte header is one stream.

use std::io::{Read, Write};

use super::BatchError;

/// Codec ids, as in the low three bits of the batch attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    None = 0,
    Gzip = 1,
    Snappy = 2,
    Lz4 = 3,
    Zstd = 4,
}

impl Compression {
    pub fn from_id(id: u8) -> Result<Compression, BatchError> {
        Ok(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            other => return Err(BatchError::UnknownCodec(other)),
        })
    }

    /// Kafka's name for the codec (`compresscodec:` in kafka-dump-log output, `compression.type`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    pub fn from_name(name: &str) -> Option<Compression> {
        Some(match name {
            "none" | "uncompressed" => Compression::None,
            "gzip" => Compression::Gzip,
            "snappy" => Compression::Snappy,
            "lz4" => Compression::Lz4,
            "zstd" => Compression::Zstd,
            _ => return None,
        })
    }
}

/// The magic header of xerial's `SnappyOutputStream`, which Kafka uses for snappy.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_BLOCK: usize = 32 * 1024;
/// Largest decompressed records region accepted (a batch is bounded by the segment size,
/// 2 GiB at most; this guards against decompression bombs in damaged or hostile data).
pub const MAX_DECOMPRESSED: u64 = 256 * 1024 * 1024;
/// Raw snappy cannot expand by more than this factor.
const SNAPPY_MAX_RATIO: usize = 32;

fn read_bounded(codec: Compression, r: impl Read, out: &mut Vec<u8>) -> Result<(), BatchError> {
    r.take(MAX_DECOMPRESSED + 1)
        .read_to_end(out)
        .map_err(|e| dec_err(codec, e))?;
    if out.len() as u64 > MAX_DECOMPRESSED {
        return Err(dec_err(codec, "decompressed records exceed 256 MiB"));
    }
    Ok(())
}

fn snappy_len(codec: Compression, block: &[u8]) -> Result<usize, BatchError> {
    let len = snap::raw::decompress_len(block).map_err(|e| dec_err(codec, e))?;
    if len > block.len() * SNAPPY_MAX_RATIO + 64 {
        return Err(dec_err(
            codec,
            format!("block claims {len} bytes from {}", block.len()),
        ));
    }
    Ok(len)
}

fn dec_err(codec: Compression, e: impl std::fmt::Display) -> BatchError {
    BatchError::Decompress(format!("{}: {e}", codec.name()))
}

/// Decompresses `input` (a batch's records region) into `out` (cleared first).
pub fn decompress(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<(), BatchError> {
    out.clear();
    match codec {
        Compression::None => out.extend_from_slice(input),
        Compression::Gzip => {
            read_bounded(codec, flate2::read::GzDecoder::new(input), out)?;
        }
        Compression::Snappy => {
            if input.len() >= 16 && input[..8] == XERIAL_MAGIC {
                let mut pos = 16;
                let mut dec = snap::raw::Decoder::new();
                while pos < input.len() {
                    if pos + 4 > input.len() {
                        return Err(dec_err(codec, "truncated xerial block header"));
                    }
                    let n = super::be::u32_at(input, pos) as usize;
                    pos += 4;
                    let block = input
                        .get(pos..pos + n)
                        .ok_or_else(|| dec_err(codec, "truncated xerial block"))?;
                    let len = snappy_len(codec, block)?;
                    if (out.len() + len) as u64 > MAX_DECOMPRESSED {
                        return Err(dec_err(codec, "decompressed records exceed 256 MiB"));
                    }
                    let start = out.len();
                    out.resize(start + len, 0);
                    dec.decompress(block, &mut out[start..])
                        .map_err(|e| dec_err(codec, e))?;
                    pos += n;
                }
            } else {
                snappy_len(codec, input)?;
                let v = snap::raw::Decoder::new()
                    .decompress_vec(input)
                    .map_err(|e| dec_err(codec, e))?;
                out.extend_from_slice(&v);
            }
        }
        Compression::Lz4 => {
            read_bounded(codec, lz4_flex::frame::FrameDecoder::new(input), out)?;
        }
        Compression::Zstd => zstd_decompress(input, out).map_err(|e| dec_err(codec, e))?,
    }
    Ok(())
}

/// Compresses `input` and appends the stream to `out`, as Kafka's producer would.
pub fn compress(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    match codec {
        Compression::None => out.extend_from_slice(input),
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            e.write_all(input)?;
            e.finish()?;
        }
        Compression::Snappy => {
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1u32.to_be_bytes()); // version
            out.extend_from_slice(&1u32.to_be_bytes()); // minimum compatible version
            let mut enc = snap::raw::Encoder::new();
            for chunk in input.chunks(XERIAL_BLOCK) {
                let c = enc.compress_vec(chunk).map_err(std::io::Error::other)?;
                out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                out.extend_from_slice(&c);
            }
        }
        Compression::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, out);
            e.write_all(input)?;
            e.finish().map_err(std::io::Error::other)?;
        }
        Compression::Zstd => zstd_compress(input, out)?,
    }
    Ok(())
}

/// Kafka's default `compression.zstd.level`.
const ZSTD_LEVEL: i32 = 3;

thread_local! {
    // One zstd context per thread, reused: creating one for each batch (its window and
    // tables) cost more than compressing a 128 KiB batch.
    static ZSTD_C: std::cell::RefCell<Option<zstd::zstd_safe::CCtx<'static>>> = const { std::cell::RefCell::new(None) };
    static ZSTD_D: std::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { std::cell::RefCell::new(None) };
}

fn zstd_error(code: usize) -> std::io::Error {
    std::io::Error::other(zstd::zstd_safe::get_error_name(code))
}

/// One zstd frame of `input` (its size in the frame header), appended to `out`.
fn zstd_compress(input: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    use zstd::zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_end;
    use zstd::zstd_safe::{CCtx, CParameter, InBuffer, OutBuffer, ResetDirective};
    ZSTD_C.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            let mut c = CCtx::try_create()
                .ok_or_else(|| std::io::Error::other("cannot create a zstd context"))?;
            c.set_parameter(CParameter::CompressionLevel(ZSTD_LEVEL))
                .map_err(zstd_error)?;
            *slot = Some(c);
        }
        let c = slot.as_mut().expect("created above");
        c.reset(ResetDirective::SessionOnly).map_err(zstd_error)?;
        c.set_pledged_src_size(Some(input.len() as u64))
            .map_err(zstd_error)?;
        out.reserve(zstd::zstd_safe::compress_bound(input.len()));
        let mut inb = InBuffer::around(input);
        loop {
            let pos = out.len();
            let left = {
                let mut outb = OutBuffer::around_pos(out, pos);
                c.compress_stream2(&mut outb, &mut inb, ZSTD_e_end)
                    .map_err(zstd_error)?
            };
            if left == 0 {
                return Ok(());
            }
            out.reserve(left);
        }
    })
}

/// Every zstd frame of `input` (Kafka's producers write one, without its size), appended to
/// `out`, at most [`MAX_DECOMPRESSED`] bytes.
fn zstd_decompress(input: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer, ResetDirective};
    ZSTD_D.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(
                DCtx::try_create()
                    .ok_or_else(|| std::io::Error::other("cannot create a zstd context"))?,
            );
        }
        let d = slot.as_mut().expect("created above");
        d.reset(ResetDirective::SessionOnly).map_err(zstd_error)?;
        let mut inb = InBuffer::around(input);
        // A frame that states its size is decoded in one step.
        let hint = zstd::zstd_safe::get_frame_content_size(input)
            .ok()
            .flatten()
            .unwrap_or(0)
            .min(16 << 20);
        out.reserve((hint as usize).max(input.len() * 4).max(4096));
        loop {
            if out.len() == out.capacity() {
                out.reserve(out.len().max(64 * 1024));
            }
            let (in_before, out_before) = (inb.pos(), out.len());
            let left = {
                let mut outb = OutBuffer::around_pos(out, out_before);
                d.decompress_stream(&mut outb, &mut inb)
                    .map_err(zstd_error)?
            };
            if out.len() as u64 > MAX_DECOMPRESSED {
                return Err(std::io::Error::other("decompressed records exceed 256 MiB"));
            }
            if left == 0 && inb.pos() == input.len() {
                return Ok(());
            }
            // No progress with room left: the input ends inside a frame.
            if inb.pos() == in_before && out.len() == out_before && out.len() < out.capacity() {
                return Err(std::io::Error::other("truncated zstd frame"));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_and_names_match_kafka() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let mut z = Vec::new();
            compress(c, &data, &mut z).unwrap();
            let mut back = Vec::new();
            decompress(c, &z, &mut back).unwrap();
            assert_eq!(back, data, "{}", c.name());
            assert_eq!(Compression::from_name(c.name()), Some(c));
            assert_eq!(Compression::from_id(c as u8).unwrap(), c);
        }
        assert!(Compression::from_id(5).is_err());
    }

    #[test]
    fn gzip_stream_is_standard_gzip() {
        let mut z = Vec::new();
        compress(Compression::Gzip, b"hello", &mut z).unwrap();
        assert_eq!(&z[..2], &[0x1f, 0x8b]);
        let mut z = Vec::new();
        compress(Compression::Lz4, b"hello", &mut z).unwrap();
        assert_eq!(&z[..4], &[0x04, 0x22, 0x4d, 0x18]);
        let mut z = Vec::new();
        compress(Compression::Snappy, b"hello", &mut z).unwrap();
        assert_eq!(&z[..8], &XERIAL_MAGIC);
    }
}

#[cfg(test)]
mod bomb_tests {
    use super::*;

    #[test]
    fn zstd_frames_without_size_several_frames_and_truncation() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 97) as u8).collect();
        // A streamed frame, as Kafka's producers write it (no content size in its header).
        let mut streamed = Vec::new();
        let mut e = zstd::stream::write::Encoder::new(&mut streamed, 3).unwrap();
        e.write_all(&data).unwrap();
        e.finish().unwrap();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&streamed)
                .ok()
                .flatten(),
            None
        );
        let mut out = Vec::new();
        decompress(Compression::Zstd, &streamed, &mut out).unwrap();
        assert_eq!(out, data);
        // Ours states its size; two frames back to back decode as one stream.
        let mut two = Vec::new();
        compress(Compression::Zstd, &data[..1000], &mut two).unwrap();
        compress(Compression::Zstd, &data[1000..], &mut two).unwrap();
        decompress(Compression::Zstd, &two, &mut out).unwrap();
        assert_eq!(out, data);
        // Cut short anywhere, or garbage: an error, never a hang or a partial success.
        for cut in [1, 5, streamed.len() / 2, streamed.len() - 1] {
            assert!(decompress(Compression::Zstd, &streamed[..cut], &mut out).is_err());
        }
        assert!(decompress(Compression::Zstd, b"not zstd at all", &mut out).is_err());
    }

    #[test]
    fn a_block_claiming_gigabytes_is_refused_without_allocating() {
        // A raw snappy preamble claiming ~3.7 GB from 5 bytes (found by fuzzing).
        let bomb = [0xff, 0xff, 0xff, 0xff, 0x0d];
        let mut out = Vec::new();
        assert!(decompress(Compression::Snappy, &bomb, &mut out).is_err());
        let mut x = XERIAL_MAGIC.to_vec();
        x.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5]);
        x.extend_from_slice(&bomb);
        assert!(decompress(Compression::Snappy, &x, &mut out).is_err());
    }
}
