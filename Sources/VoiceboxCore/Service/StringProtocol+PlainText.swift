/// A string operation the service would otherwise take from Foundation: voiceboxd links no
/// Foundation, which keeps its pages out of the service's resident memory (see docs/architecture.md).
extension StringProtocol {
    /// The text without the whitespace and newlines at either end.
    public var trimmingWhitespace: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }),
              let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}
