import { placeholdersOf, render, whatsappValues } from './templates';

describe('placeholdersOf', () => {
  it('lists names in order of first appearance, once, across texts', () => {
    expect(
      placeholdersOf(
        'Hi {{first_name}}, {{ plan.name }} renews {{date}}.',
        undefined,
        'Dear {{first_name}} {{last-name}}',
      ),
    ).toEqual(['first_name', 'plan.name', 'date', 'last-name']);
    expect(placeholdersOf('{{2}} then {{1}} then {{2}}')).toEqual(['2', '1']);
    expect(placeholdersOf()).toEqual([]);
    expect(placeholdersOf(undefined, '')).toEqual([]);
  });

  it('ignores what is not a placeholder', () => {
    const name64 = 'a'.repeat(64);
    expect(placeholdersOf(`{{}} {{ }} {{a b}} {{ünï}} {name} {{ x }} {{${name64}}} {{${name64}b}} {{{y}}}`)).toEqual([
      'x',
      name64,
      'y',
    ]);
  });
});

describe('render', () => {
  it('fills every placeholder, spaces inside the braces or not', () => {
    expect(render('Hi {{ name }}, {{name}}! Code {{1}}.', { name: 'Ada', 1: '42' })).toEqual({
      ok: true,
      text: 'Hi Ada, Ada! Code 42.',
    });
    expect(render('no placeholders', {})).toEqual({ ok: true, text: 'no placeholders' });
  });

  it('reports every missing value, in order, instead of rendering', () => {
    expect(render('{{b}} {{a}} {{c}} {{b}}', { c: 'x' })).toEqual({ ok: false, missing: ['b', 'a'] });
  });

  it('inserts values verbatim', () => {
    const values = { a: '{{b}}', b: 'B', c: '$& $1 $$' };
    expect(render('{{a}} {{b}} {{c}}', values)).toEqual({ ok: true, text: '{{b}} B $& $1 $$' });
    expect(render('{{a}}', { a: '' })).toEqual({ ok: true, text: '' });
  });

  it('does not find values on Object.prototype', () => {
    expect(render('{{constructor}} {{__proto__}} {{toString}} {{hasOwnProperty}}', {})).toEqual({
      ok: false,
      missing: ['constructor', '__proto__', 'toString', 'hasOwnProperty'],
    });
    // As a lead's JSON gives them: own properties, which count.
    const given = JSON.parse('{"__proto__": "P", "constructor": "C"}') as Record<string, string>;
    expect(render('{{__proto__}}/{{constructor}}', given)).toEqual({ ok: true, text: 'P/C' });
  });

  it('treats a value that is not a string as missing', () => {
    expect(render('{{n}}', { n: 5 as unknown as string })).toEqual({ ok: false, missing: ['n'] });
  });
});

describe('whatsappValues', () => {
  it('numbers a list from 1', () => {
    expect(whatsappValues(['Ada', 'Tuesday'])).toEqual({ 1: 'Ada', 2: 'Tuesday' });
    expect(render('Hi {{1}}, see you {{2}}', whatsappValues(['Ada', 'Tuesday']))).toEqual({
      ok: true,
      text: 'Hi Ada, see you Tuesday',
    });
  });

  it('keeps an object as given, and makes nothing of undefined', () => {
    expect(whatsappValues({ 1: 'Ada', 3: 'x' })).toEqual({ 1: 'Ada', 3: 'x' });
    expect(whatsappValues(undefined)).toEqual({});
    expect(whatsappValues([])).toEqual({});
    const given = JSON.parse('{"__proto__": "P"}') as Record<string, string>;
    const values = whatsappValues(given);
    expect(Object.getPrototypeOf(values)).toBe(Object.prototype);
    expect(render('{{__proto__}}', values)).toEqual({ ok: true, text: 'P' });
  });
});
