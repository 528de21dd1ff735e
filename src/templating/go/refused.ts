// The functions of the Go engine's set (Sprig v3.3.0 minus env, expandenv and getHostByName,
// plus ESO's helpers) that ESI does not render: a template calling one is refused when it is
// parsed (at admission), with a message naming the function, instead of "not defined" or a
// guess (docs/decisions/0087-templating-engines.md). test/src/templating/go/index.differential.test.ts
// holds this list to the oracle's set: every Go function is rendered here or listed here.
// A function moves from this list to the engine with differential coverage.

const GROUPS: Record<string, string> = {
  /** ESO's helpers not yet ported (the others: eso-*.ts). */
  eso: 'certSANs fromYaml',
  /** Dates, durations and the clock (Go's time layouts and zones). */
  dates: 'now ago date dateInZone date_in_zone dateModify date_modify mustDateModify must_date_modify duration durationRound ' +
    'htmlDate htmlDateInZone toDate mustToDate unixEpoch',
  /** Randomness and key generation: a render would differ from one refresh to the next. */
  random: 'randAlpha randAlphaNum randAscii randBytes randInt randNumeric shuffle uuidv4 genPrivateKey genCA genCAWithKey ' +
    'genSelfSignedCert genSelfSignedCertWithKey genSignedCert genSignedCertWithKey buildCustomCert',
  /** Other cryptography. */
  crypto: 'bcrypt htpasswd derivePassword encryptAES decryptAES sha512sum',
  strings: 'abbrevboth camelcase kebabcase snakecase swapcase initials trimall wrap wrapWith plural hello b32dec',
  numbers: 'add1f addf subf mulf divf div mod max maxf min minf biggest ceil floor round atoi toDecimal seq',
  lists: 'all any append mustAppend prepend mustPrepend push mustPush chunk mustChunk initial mustInitial rest mustRest ' +
    'reverse mustReverse without mustWithout has mustHas mustFirst mustLast mustCompact mustUniq mustSlice tuple concat',
  dicts: 'keys values pick omit pluck dig set unset merge mustMerge mergeOverwrite mustMergeOverwrite deepCopy mustDeepCopy deepEqual',
  json: 'toRawJson mustToJson mustToPrettyJson mustToRawJson mustFromJson',
  types: 'typeOf typeIs typeIsLike kindIs',
  paths: 'base dir ext clean isAbs osBase osClean osDir osExt osIsAbs urlParse urlJoin',
  semver: 'semver semverCompare',
};

export const REFUSED_FUNCTIONS: ReadonlySet<string> = new Set(Object.values(GROUPS).flatMap((g) => g.split(' ')));
