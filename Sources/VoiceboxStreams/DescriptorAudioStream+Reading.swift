import Glibc
import VoiceboxContract
import VoiceboxCore

/// Taking what a wait found: the caller's own 16 kHz mono s16le bytes, or a converter's frames.
extension DescriptorAudioStream {
    /// Reads what the stream holds, up to about what `wanted` samples need.
    func fill(wanted: Int) throws {
        var buffer = [UInt8](repeating: 0, count: min(65_536, max(4_096, wanted * 2)))
        let got = buffer.withUnsafeMutableBytes { raw -> Int in
            if conversion != nil { return Glibc.read(descriptor, raw.baseAddress, raw.count) }
            return switch kind {
            case .socket: recv(descriptor, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT))
            case .pipe: Glibc.read(descriptor, raw.baseAddress, raw.count)
            // At an offset of our own: the caller's offset stays where it was, as with `fd`.
            case .file: pread(descriptor, raw.baseAddress, raw.count, fileOffset)
            }
        }
        // A writer that went away by resetting its connection ended the stream as a close does,
        // only without a chance to finish its last frame.
        let reset = got < 0 && errno == ECONNRESET
        if got < 0, !reset {
            if errno == EINTR || errno == EAGAIN { return }
            throw RecognitionError.invalidStream("reading it failed: \(Self.reason(errno))")
        }
        if let conversion {
            try takeFrames(buffer[0..<max(0, got)], from: conversion)
            return
        }
        guard got > 0 else {
            ended = true
            if oddByte != nil, !reset {
                throw StreamInput.partialFrame(1, .s16le, channels: 1)
            }
            return
        }
        waitedSinceData = .zero
        if kind == .file { fileOffset += off_t(got) }
        var bytes = buffer[0..<got]
        if let odd = oddByte {
            bytes.insert(odd, at: bytes.startIndex)
            oddByte = nil
        }
        if bytes.count % 2 == 1 { oddByte = bytes.removeLast() }
        append(WorkerProtocol.samples(fromPayload: bytes) ?? [])
    }

    /// The converter's frames in `bytes` (none: its pipe closed): its samples, then its end or
    /// why the stream cannot be read (`F`, meant for the caller). A pipe that closes before
    /// either is a converter that crashed or was killed.
    private func takeFrames(_ bytes: ArraySlice<UInt8>, from conversion: any StreamConversion) throws {
        guard !bytes.isEmpty else {
            ended = true
            throw RecognitionError.engineFailure("the stream's converter (\(WorkerProtocol.executableName)) was "
                                                 + "\(conversion.ending()) while reading it")
        }
        bytes.withUnsafeBytes { frames.append($0) }
        while true {
            switch frames.next() {
            case .partial: return
            case .malformed(let why): throw violation(why)
            case .frame(let tag, let payload):
                switch WorkerProtocol.Tag(rawValue: tag) {
                case .samples:
                    guard let samples = WorkerProtocol.samples(fromPayload: payload) else { throw violation("an odd number of bytes") }
                    waitedSinceData = .zero
                    append(samples)
                case .end:
                    ended = true
                case .failure:
                    ended = true
                    throw RecognitionError.invalidStream(String(decoding: payload, as: UTF8.self))
                default:
                    throw violation("a message \(tag)")
                }
            }
        }
    }

    private func violation(_ what: String) -> RecognitionError {
        .engineFailure("the stream's converter (\(WorkerProtocol.executableName)) broke its protocol (\(what))")
    }

    private func append(_ samples: [Int16]) {
        pending.append(samples)
        framesReceived += samples.count
    }
}
