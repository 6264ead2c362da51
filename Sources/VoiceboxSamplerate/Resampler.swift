import CSamplerate
import VoiceboxCore

/// Streams mono float samples from one rate to another through libsamplerate.
public final class Resampler {
    private let state: OpaquePointer
    public let ratio: Double

    public init(from sourceRate: Int, to targetRate: Int) throws {
        var error: Int32 = 0
        // SINC_FASTEST still passes 80% of the band with 97 dB of rejection: plenty for speech,
        // and several times faster than the better sinc converters.
        guard let state = src_new(Int32(SRC_SINC_FASTEST), 1, &error) else {
            throw RecognitionError.engineFailure("libsamplerate: \(String(cString: src_strerror(error)))")
        }
        self.state = state
        ratio = Double(targetRate) / Double(sourceRate)
    }

    deinit { src_delete(state) }

    /// Converts `input`; with `end` it also drains what the filter still holds.
    public func process(_ input: [Float], end: Bool) throws -> [Float] {
        var output: [Float] = []
        var consumed = 0
        var scratch = [Float](repeating: 0, count: Int((Double(input.count) * ratio).rounded(.up)) + 256)
        while true {
            var data = SRC_DATA()
            let (status, used, generated) = input.withUnsafeBufferPointer { source in
                scratch.withUnsafeMutableBufferPointer { target in
                    data.data_in = source.baseAddress.map { $0 + consumed }
                    data.input_frames = input.count - consumed
                    data.data_out = target.baseAddress
                    data.output_frames = target.count
                    data.src_ratio = ratio
                    data.end_of_input = end ? 1 : 0
                    let status = src_process(state, &data)
                    return (status, data.input_frames_used, data.output_frames_gen)
                }
            }
            guard status == 0 else {
                throw RecognitionError.engineFailure("libsamplerate: \(String(cString: src_strerror(status)))")
            }
            consumed += used
            output += scratch[0..<generated]
            // Done when all input is in and (unless draining) nothing more comes out.
            if consumed >= input.count, generated == 0 || !end && generated < scratch.count { break }
        }
        return output
    }
}
