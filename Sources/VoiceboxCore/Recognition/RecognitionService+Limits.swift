/// How many recognitions may run and wait (see `RecognitionService`).
extension RecognitionService {
    /// How many file recognitions may wait for a decoder, in all and per caller.
    public static let fileQueueLimit = 64
    public static let fileQueuePerCaller = 16
    /// How many streams may hold a decoder at once (running, or waiting for their next turn
    /// while they have audio), in all and of one caller: each holds a model's worth of memory,
    /// about 70 MB. A stream whose writer is silent for `stream-release` (`Bound`) gives its
    /// decoder back until it sends again. Streams past the limits wait, holding nothing; files
    /// and streams that hold a decoder go on taking turns.
    public static let streamDecoderLimit = 4
    /// What all streams together may keep to hear a cut utterance again (`MemoryBudget`): 4 MiB,
    /// 13 utterances of 10 s (`RecognitionRun.replaySeconds`).
    public static let replayBudgetBytes = 4 << 20
    /// What all streams together may read ahead (`RecognitionRun+ReadAhead`): 80 MiB, two
    /// streams of the longest length read in parts (20 min, 38 MB) at once.
    public static let readAheadBudgetBytes = 80 << 20
    public static let streamDecodersPerCaller = 2
}
