import t from 'tap';
t.test('tsx loader works', async (t) => {
  const x: number = 1;
  t.equal(x, 1);
});
