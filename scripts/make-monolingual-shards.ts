// Writes small synthetic monolingual shards (queries and documents in the same non-English language),
// one per language, for the BM25 analyzer check: each query names a medical concept in a different
// inflected or written form than its document does (plural/singular, case ending, elided article, a
// particle glued to a Korean word, a Thai word inside an unspaced sentence, a Han compound whose
// characters also occur apart in distractors). The language's analyzer should bring the forms
// together; the English analyzer should not. Some pairs are left that a stemmer does not conflate
// (Snowball Russian: переломы → перелом but перелом → перел), so a language can stay below 1. The sentences are written for this test, not sampled
// from a corpus: they measure token handling, not retrieval quality.
//
//   npx tsx scripts/make-monolingual-shards.ts <out-folder>
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** One concept: a document sentence holding one form, and a query with another form. */
interface Concept {
  doc: string;
  query: string;
}

/** A language's shard: its concepts and distractor documents (which no query is judged against). */
export interface MonolingualSpec {
  language: string;
  family: string;
  concepts: Concept[];
  distractors: string[];
}

/** The specs, by language. */
export const MONOLINGUAL_SPECS: readonly MonolingualSpec[] = [
  {
    language: 'de',
    family: 'Germanic',
    concepts: [
      { doc: 'Die Behandlung der Knochenbrüche bei älteren Menschen dauert lange.', query: 'Knochenbruch' },
      { doc: 'Herzkrankheiten sind in vielen Ländern häufig.', query: 'Herzkrankheit' },
      { doc: 'Lungenentzündungen treten im Winter öfter auf.', query: 'Lungenentzuendung' },
      { doc: 'Die Ärzte untersuchen den Patienten gründlich.', query: 'Arzt' },
      { doc: 'Starke Schmerzen im Rücken nach dem Sport.', query: 'der Schmerz' },
    ],
    distractors: [
      'Gesunde Ernährung im Alter.',
      'Bewegung und Schlaf sind wichtig.',
      'Impfungen für Reisende.',
    ],
  },
  {
    language: 'es',
    family: 'Romance',
    concepts: [
      { doc: 'La enfermedad crónica requiere controles frecuentes.', query: 'crónico' },
      { doc: 'Las infecciones urinarias son comunes en mujeres.', query: 'infección' },
      { doc: 'Los médicos revisan el historial del paciente.', query: 'médica' },
      { doc: 'Las arritmias cardíacas pueden ser graves.', query: 'cardíaco' },
      { doc: 'Las complicaciones quirúrgicas se vigilan tras la operación.', query: 'quirúrgico' },
    ],
    distractors: ['Dieta equilibrada y ejercicio.', 'Vacunas para viajeros.', 'Dormir bien cada noche.'],
  },
  {
    language: 'fr',
    family: 'Romance',
    concepts: [
      { doc: "Le traitement de l'infection dure une semaine.", query: 'infection' },
      { doc: "Une crise d'asthme nocturne réveille le patient.", query: 'asthme' },
      { doc: "Le dépistage de l'hépatite est recommandé.", query: 'hépatites' },
      { doc: 'Les hôpitaux manquent de personnel.', query: 'hôpital' },
      { doc: "L'ostéoporose fragilise les os.", query: 'ostéoporose' },
    ],
    distractors: ['Une alimentation variée.', 'Le sommeil des enfants.', 'Vaccins pour les voyageurs.'],
  },
  {
    language: 'it',
    family: 'Romance',
    concepts: [
      { doc: 'Le malattie rare colpiscono pochi pazienti.', query: 'malattia' },
      { doc: "Il reparto dell'ospedale è al secondo piano.", query: 'ospedali' },
      { doc: 'Le aritmie cardiache richiedono un controllo.', query: 'cardiaco' },
      { doc: "L'infezione è stata curata con antibiotici.", query: 'infezione' },
      { doc: 'Le fratture ossee guariscono lentamente.', query: 'frattura' },
    ],
    distractors: ['Una dieta sana.', 'Il sonno dei bambini.', 'Vaccini per chi viaggia.'],
  },
  {
    language: 'pt',
    family: 'Romance',
    concepts: [
      { doc: 'As complicações cirúrgicas são raras.', query: 'cirúrgico' },
      { doc: 'As doenças cardíacas matam muitas pessoas.', query: 'cardíaco' },
      { doc: 'Os médicos recomendam exercício diário.', query: 'médica' },
      { doc: 'Infecções respiratórias aumentam no inverno.', query: 'respiratório' },
      { doc: 'Fraturas ósseas exigem repouso.', query: 'ósseo' },
    ],
    distractors: ['Alimentação saudável.', 'O sono das crianças.', 'Vacinas para viajantes.'],
  },
  {
    language: 'ru',
    family: 'Slavic',
    concepts: [
      { doc: 'Симптомы этой болезни появляются постепенно.', query: 'болезнь' },
      { doc: 'Курс лечения длится две недели.', query: 'лечение' },
      { doc: 'Переломы костей у пожилых людей заживают медленно.', query: 'перелом' },
      { doc: 'Пациент с пневмонией был госпитализирован.', query: 'пневмония' },
      { doc: 'Признаки сердечной недостаточности.', query: 'сердечная недостаточность' },
    ],
    distractors: ['Здоровое питание.', 'Сон и отдых.', 'Прививки для путешественников.'],
  },
  {
    language: 'fi',
    family: 'Uralic',
    concepts: [
      { doc: 'Keuhkoissa havaittiin muutoksia.', query: 'keuhkot' },
      { doc: 'Potilas sairastui syöpään viime vuonna.', query: 'syöpä' },
      { doc: 'Verenpaineen hoito aloitettiin heti.', query: 'verenpaine' },
      { doc: 'Lääkärit tutkivat potilaan.', query: 'lääkäri' },
      { doc: 'Munuaisten toiminta heikkeni.', query: 'munuaiset' },
    ],
    distractors: ['Terveellinen ruokavalio.', 'Uni ja lepo.', 'Rokotteet matkailijoille.'],
  },
  {
    language: 'tr',
    family: 'Turkic',
    concepts: [
      { doc: 'Kalp hastalığı yaşlılarda sık görülür.', query: 'hastalık' },
      { doc: 'Kalbin ritmi düzensizdi.', query: 'kalp' },
      { doc: 'Böbreklerde taş bulundu.', query: 'böbrek' },
      { doc: 'İlaçları düzenli kullanmak gerekir.', query: 'ilaç' },
      { doc: "Ankara'daki hastanede ameliyat edildi.", query: 'Ankara' },
    ],
    distractors: ['Sağlıklı beslenme.', 'Uyku ve dinlenme.', 'Gezginler için aşılar.'],
  },
  {
    language: 'zh',
    family: 'CJK',
    concepts: [
      { doc: '患者长期患有糖尿病需要定期复查。', query: '糖尿病' },
      { doc: '高血压会增加中风的风险。', query: '高血压' },
      { doc: '老年人肺炎的症状不典型。', query: '肺炎' },
      { doc: '骨折后需要固定和休息。', query: '骨折' },
    ],
    // The query characters occur here too, but never as the concept's bigrams.
    distractors: ['血糖尿检病', '糖和尿', '高压和血', '肺部炎症', '骨头折断', '病尿糖'],
  },
  {
    language: 'ja',
    family: 'CJK',
    concepts: [
      { doc: '高血圧の治療には生活習慣の改善が必要です。', query: '高血圧' },
      { doc: '糖尿病の患者は定期的に検査を受けます。', query: '糖尿病' },
      { doc: '高齢者の骨折は回復に時間がかかります。', query: '骨折' },
      { doc: '肺炎で入院しました。', query: '肺炎' },
    ],
    distractors: ['高圧と血', '糖と尿と病', '骨と折', '肺と炎', '圧と高と血'],
  },
  {
    language: 'ko',
    family: 'CJK',
    concepts: [
      { doc: '당뇨병은 꾸준한 관리가 필요합니다.', query: '당뇨병' },
      { doc: '고혈압을 조절하기 위해 약을 먹습니다.', query: '고혈압' },
      { doc: '폐렴이 심해져서 입원했습니다.', query: '폐렴' },
      { doc: '골절로 깁스를 했습니다.', query: '골절' },
    ],
    distractors: ['건강한 식습관', '충분한 수면', '여행자 예방접종'],
  },
  {
    language: 'th',
    family: 'Thai',
    concepts: [
      { doc: 'ผู้ป่วยโรคเบาหวานต้องควบคุมน้ำตาล', query: 'เบาหวาน' },
      { doc: 'ความดันโลหิตสูงเพิ่มความเสี่ยงโรคหัวใจ', query: 'ความดันโลหิตสูง' },
      { doc: 'เด็กที่เป็นปอดอักเสบต้องนอนโรงพยาบาล', query: 'ปอดอักเสบ' },
      { doc: 'ผู้สูงอายุกระดูกหักได้ง่าย', query: 'กระดูก' },
    ],
    distractors: ['อาหารเพื่อสุขภาพ', 'การนอนหลับที่ดี', 'วัคซีนสำหรับนักเดินทาง'],
  },
];

/** Default output folder of the e2e test (gitignored). */
export const MONOLINGUAL_OUT_DIR = join(import.meta.dirname, '../tests/fixtures/monolingual/generated');

/**
 * Writes one shard folder per spec under `outDir` (BEIR + images layout, `language` in shard.json).
 * With `declareLanguage: false` the shard declares no language (folders `mono-<lang>-undeclared`), so
 * its documents get the English analyzer: the baseline the language's analyzer is compared with.
 */
export function writeMonolingualShards(
  outDir: string,
  specs = MONOLINGUAL_SPECS,
  opts: { declareLanguage?: boolean } = {},
): string[] {
  const declare = opts.declareLanguage ?? true;
  const folders: string[] = [];
  for (const spec of specs) {
    const dir = join(outDir, `mono-${spec.language}${declare ? '' : '-undeclared'}`);
    mkdirSync(join(dir, 'qrels'), { recursive: true });
    const corpus: string[] = [];
    const queries: string[] = [];
    const qrels = ['query-id\tcorpus-id\tscore'];
    spec.concepts.forEach((c, i) => {
      const n = String(i + 1).padStart(2, '0');
      corpus.push(JSON.stringify({ _id: `d${n}`, title: '', text: c.doc }));
      queries.push(JSON.stringify({ _id: `q${n}`, text: c.query, task: 'mono', language: spec.language }));
      qrels.push(`q${n}\td${n}\t1`);
    });
    spec.distractors.forEach((t, i) =>
      corpus.push(JSON.stringify({ _id: `x${String(i + 1).padStart(2, '0')}`, title: '', text: t })),
    );
    writeFileSync(join(dir, 'corpus.jsonl'), corpus.join('\n') + '\n');
    writeFileSync(join(dir, 'queries.jsonl'), queries.join('\n') + '\n');
    writeFileSync(join(dir, 'qrels/test.tsv'), qrels.join('\n') + '\n');
    const manifest = {
      name: `mono-${spec.language}${declare ? '' : '-undeclared'}`,
      version: '0.0.0',
      format: 'beir+images',
      description: `Synthetic ${spec.language} monolingual check for BM25 analyzers (generated, not real data).`,
      license: 'MIT',
      ...(declare ? { language: spec.language } : {}),
      relevance: { '1': 'the document names the queried concept' },
      tasks: [{ id: 'mono', query_modality: 'text', corpus_modality: 'text' }],
    };
    writeFileSync(join(dir, 'shard.json'), JSON.stringify(manifest, null, 2) + '\n');
    writeFileSync(join(dir, 'NOTICE.md'), 'Synthetic sentences written for a test; no third-party data.\n');
    folders.push(dir);
  }
  return folders;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const out = process.argv[2];
  if (!out) {
    console.error('usage: npx tsx scripts/make-monolingual-shards.ts <out-folder>');
    process.exit(2);
  }
  for (const f of writeMonolingualShards(resolve(out))) console.log(f);
}
