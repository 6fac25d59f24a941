// The Tune rooms screen's recorder, on the audio thread: the microphone's
// first channel, handed to the page in blocks of 4096 frames (a message per
// 128-frame render quantum would be 375 a second).

class TuttiRecorder extends AudioWorkletProcessor {
  constructor() {
    super();
    this.block = new Float32Array(4096);
    this.filled = 0;
    this.port.onmessage = (e) => {
      if (e.data === 'flush' && this.filled > 0) {
        this.port.postMessage(this.block.slice(0, this.filled));
        this.filled = 0;
      }
    };
  }

  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (!channel) return true;
    let i = 0;
    while (i < channel.length) {
      const n = Math.min(channel.length - i, this.block.length - this.filled);
      this.block.set(channel.subarray(i, i + n), this.filled);
      this.filled += n;
      i += n;
      if (this.filled === this.block.length) {
        this.port.postMessage(this.block.slice(0));
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor('tutti-recorder', TuttiRecorder);
