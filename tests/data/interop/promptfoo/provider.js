// A deterministic stand-in for a model: canned answers keyed by the test's question, so the eval
// needs no network; one question gets a provider error.
const ANSWERS = {
  'What is the capital of France?': 'Paris',
  'What is 2 + 2?': '5',
  'Which planet is known as the red planet?': 'Mars',
};
class CannedProvider {
  constructor(options) { this.providerId = (options && options.id) || 'canned'; }
  id() { return this.providerId; }
  async callApi(prompt, context) {
    const question = context.vars.question;
    if (question === 'Who wrote Hamlet?') return { error: 'simulated provider failure' };
    return { output: ANSWERS[question] ?? 'I do not know', tokenUsage: { total: 3, prompt: 2, completion: 1 } };
  }
}
module.exports = CannedProvider;
