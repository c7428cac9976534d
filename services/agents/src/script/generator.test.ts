import { LocalScriptGenerator, type ScriptInput } from './generator';

const input: ScriptInput = {
  agentName: 'Front desk',
  category: 'reception',
  greetingMessage: 'Sunrise Clinic, how can I help?',
  appointmentScope: 'hospital',
  company: {
    id: 'c1',
    name: 'Sunrise Clinic',
    industry: 'Healthcare',
    businessHours: { tue: ['09:00-17:00'], mon: ['08:00-18:00'] },
  },
  documents: [{ fileId: 'f1', title: 'FAQ', text: 'Parking   is free.\n\nBring your card.' }],
  doctors: [
    { id: 'd2', name: 'Dr. Okafor' },
    { id: 'd1', name: 'Dr. Abara', specialty: 'Cardiology' },
  ],
  booking: { slotsEnabled: true, bookingEnabled: false },
};

describe('local script generator', () => {
  const gen = new LocalScriptGenerator();

  it('writes the greeting, the company, the booking rules, the doctors and each document', async () => {
    const text = await gen.generate(input);
    expect(text.split('\n')).toEqual(
      expect.arrayContaining([
        'Sunrise Clinic, how can I help?',
        'You answer calls for Sunrise Clinic (Healthcare), as its reception line.',
        'Business hours: {"mon":["08:00-18:00"],"tue":["09:00-17:00"]}',
        '- Appointments are handled at this branch.',
        '- Offer free appointment slots.',
        '- Do not book appointments; take a message instead.',
        '- Dr. Abara, Cardiology',
        '- Dr. Okafor',
        '## Reference: FAQ',
        'Parking is free. Bring your card.',
      ]),
    );
  });

  it('gives the same script for the same input, whatever the order of keys and doctors', async () => {
    const shuffled = {
      ...input,
      doctors: [...input.doctors].reverse(),
      company: { ...input.company!, businessHours: { mon: ['08:00-18:00'], tue: ['09:00-17:00'] } },
    };
    expect(await gen.generate(shuffled)).toBe(await gen.generate(input));
  });

  it('greets on the company’s behalf when no greeting is set, and quotes long documents in part', async () => {
    const { greetingMessage: _none, ...withoutGreeting } = input;
    const text = await gen.generate({
      ...withoutGreeting,
      documents: [{ fileId: 'f', title: 'Long', text: 'x'.repeat(5_000) }],
    });
    expect(text).toContain('Thank you for calling Sunrise Clinic. How can I help you today?');
    expect(text).toContain(`${'x'.repeat(1_500)}…`);
    expect(text).not.toContain('x'.repeat(1_501));
  });
});
