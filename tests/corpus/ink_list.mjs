// A list that grows by a line a key, drawn by Ink (React for terminals; tests/it/seen.rs installs
// ink@8.0.0 beside it): once taller than the window, Ink redraws it all from the top. q ends it.
import React, {useState} from 'react';
import {render, Text, Box, useInput, useApp} from 'ink';
const h = React.createElement;
function List() {
    const [n, setN] = useState(1);
    const {exit} = useApp();
    useInput((input) => {
        if (input === 'q') exit();
        else setN((m) => m + 1);
    });
    const rows = [];
    for (let i = 0; i < n; i++) rows.push(h(Text, {key: i}, `item ${i} of the list`));
    return h(Box, {flexDirection: 'column'}, ...rows);
}
render(h(List));
