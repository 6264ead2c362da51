print("voiceboxd")
