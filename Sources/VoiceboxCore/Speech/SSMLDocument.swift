import VoiceboxContract

/// A caller's SSML, checked before anything of it reaches speech-dispatcher.
///
/// speech-dispatcher 0.11 trusts what it is given: the output module reports every `<mark>` back to
/// the server as a line of its own, so a mark name holding a line break is read as two replies (bogus
/// SpeechMark signals), one holding a line of only `.` ends the module's reply early and freezes speech
/// for every client until the server is restarted, and so does a mark name of about 1,280 bytes
/// (measured with 0.11.4 and espeak-ng 1.51). Deep nesting and long breaks make a short document hold
/// the queue for minutes of silence (9,000 nested `<s>`: over 90 s; each level adds about 80 ms).
/// espeak-ng reads tags without regard to case (`<MARK NAME=…>` is a mark) and finds an attribute by
/// searching the tag's text for ` name=`, inside other attributes' values too. So the rules below
/// apply to element and attribute names in any case, and a value that holds what reads as another
/// attribute is refused. It reads a value up to the next double quote, whatever quote opened it, so
/// a mark's name must be in double quotes. speech-dispatcher opens an `<audio src>` itself, in the
/// server (a pipe there blocks it for good; any file of the user is played in full), so `<audio>` and
/// `<lexicon>` (a URI too) are refused.
/// So the document must be well-formed XML within these bounds, or it is refused with the reason.
public struct SSMLDocument: Sendable, Equatable {
    /// Elements inside one another, `<speak>` included.
    public static let maximumDepth = 32
    /// Elements in all. 4,000 marks begin to be spoken within 0.34 s.
    public static let maximumElements = 4_096
    public static let maximumMarkNameBytes = 64
    /// An element's or attribute's name: espeak-ng reads the markup of elements it does not know
    /// out loud (a 20 KB element name spoke for minutes).
    public static let maximumNameBytes = 64
    /// Attributes on one element (SSML's elements have at most six, `<speak>`'s namespaces aside).
    public static let maximumAttributes = 16
    /// One attribute's value (rates, pitches, voice names, URIs are short): espeak-ng reads a long
    /// `<prosody rate>` out, 65 KB of it for 21 s, holding every other caller's speech.
    public static let maximumAttributeBytes = 256
    /// One `<break time>`, and all of a document's together.
    public static let maximumBreakSeconds = 10.0
    public static let maximumTotalBreakSeconds = 60.0
    /// What a `<break>` without a time counts for in the total.
    public static let untimedBreakSeconds = 1.0

    /// What is sent: the caller's text, wrapped in `<speak>` when it is not a whole document.
    public let text: String
    /// The mark names, in document order.
    public let marks: [String]

    public init(_ text: String) throws(VoiceboxError) {
        self.text = Self.isWholeDocument(text) ? text : "<speak>\(text)</speak>"
        var reader = SSMLReader(self.text)
        do {
            try reader.readDocument()
        } catch {
            throw .invalidArgument(error.message(at: reader.location))
        }
        marks = reader.marks
    }

    /// Whether `text` is a document of its own: `<speak>` (or a DOCTYPE, to be refused) first, after
    /// any XML declaration and comments. Anything else is wrapped in `<speak>`.
    static func isWholeDocument(_ text: String) -> Bool {
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0.isWhitespace }
            if rest.hasPrefix("<?xml"), let end = rest.firstRange(of: "?>") {
                rest = rest[end.upperBound...]
            } else if rest.hasPrefix("<!--"), let end = rest.firstRange(of: "-->") {
                rest = rest[end.upperBound...]
            } else {
                return rest.hasPrefix("<speak") || rest.hasPrefix("<!DOCTYPE")
            }
        }
    }
}

/// Why a document was refused; the message names what is wrong.
struct SSMLProblem: Error {
    let what: String
    /// Whether the place in the text helps (a syntax error) or not (a limit over the whole).
    var located = true

    func message(at location: (line: Int, column: Int)) -> String {
        located ? "SSML \(what) (line \(location.line), column \(location.column))" : "SSML \(what)"
    }
}
